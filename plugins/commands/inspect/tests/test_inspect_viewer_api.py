"""The viewer's JSON API on a real loopback server: paging, filters, search, one episode with its mask."""
from __future__ import annotations

import json
import shutil

import httpx
import pytest

from agentgym_inspect.viewer.sample import write_sample_run
from agentgym_inspect.viewer.server import BackgroundViewer

STEP = "trajectories/step_000002"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    run = write_sample_run(tmp_path_factory.mktemp("runs") / "demo", steps=3, episodes_per_step=120, seed=1)
    with BackgroundViewer(run) as url, httpx.Client(base_url=url, timeout=10) as client:
        yield run, client


def test_run_lists_steps_with_metrics_and_horizon(served):
    run, client = served
    body = client.get("/api/run").json()
    assert body["name"] == "demo"
    assert [f["key"] for f in body["files"]] == [f"trajectories/step_{i:06d}" for i in (1, 2, 3)]
    assert body["files"][0]["horizon"] == 2 and body["files"][0]["episodes"] == 120
    assert set(body["eval"]) == {"before", "after"}
    headers, rows = body["eval_table"]
    assert headers == ["metric", "before", "after"] and rows[0][0] == "n"
    assert "scaling_inter" in body["config"]
    assert client.get("/").text.startswith("<!doctype html>")
    assert client.get("/static/app.js").status_code == 200


def test_pages_filters_sorts_and_searches(served):
    run, client = served
    lines = (run / f"{STEP}.jsonl").read_text().splitlines()
    truth = [json.loads(line) for line in lines]
    page = client.get("/api/episodes", params={"file": STEP, "offset": 100, "limit": 50}).json()
    assert page["total"] == 120 and [e["index"] for e in page["items"]] == list(range(100, 120))
    assert "token_ids" not in page["items"][0]  # summaries only

    ok = client.get("/api/episodes", params={"file": STEP, "filter": "success", "limit": 200}).json()
    assert ok["total"] == sum(t["success"] for t in truth) and all(e["success"] for e in ok["items"])
    bad = client.get("/api/episodes", params={"file": STEP, "filter": "failure", "limit": 1}).json()
    assert ok["total"] + bad["total"] == 120 and len(bad["items"]) == 1

    best = client.get("/api/episodes", params={"file": STEP, "sort": "score", "limit": 5}).json()["items"]
    assert best[0]["score"] == max(t["score"] for t in truth)
    longest = client.get("/api/episodes", params={"file": STEP, "sort": "turns", "limit": 1}).json()["items"][0]
    assert longest["turns"] == max(len(t["turns"]) for t in truth)

    hits = client.get("/api/episodes", params={"file": STEP, "q": "Pick Up The Key", "limit": 200}).json()
    expected = [i for i, t in enumerate(truth) if any("pick up the key" in x["text"] or "pick up the key" in x["observation"] for x in t["turns"])]
    assert [e["index"] for e in hits["items"]] == expected and 0 < hits["total"] < 120
    none = client.get("/api/episodes", params={"file": STEP, "q": 'no "such" text'}).json()
    assert none["total"] == 0


def test_episode_turn_by_turn_with_mask(served):
    pytest.importorskip("tokenizers", reason="token pieces need the tokenizers package")
    run, client = served
    truth = json.loads((run / f"{STEP}.jsonl").read_text().splitlines()[7])
    ep = client.get("/api/episode", params={"file": STEP, "index": 7}).json()
    assert ep["decoded"] and ep["episode_id"] == truth["episode_id"] and ep["max_turns"] == truth["max_turns"]
    assert len(ep["turns"]) == len(truth["turns"])
    # Every token shown once, with its loss-mask bit: prompt, then per turn model + env tokens.
    shown = ep["prompt_tokens"] + [tok for t in ep["turns"] for tok in t["model_tokens"] + t["env_tokens"]]
    assert [m for _, m in shown] == truth["loss_mask"]
    first = ep["turns"][0]
    assert " ".join(p for p, _ in first["model_tokens"]) == truth["turns"][0]["text"]
    assert all(m == 1 for _, m in first["model_tokens"])
    assert first["reward"] == truth["rewards"][0]


def test_bad_requests_say_what_is_wrong(served):
    _, client = served
    r = client.get("/api/episodes", params={"file": "../../etc/passwd"})
    assert r.status_code == 404 and "no trajectory file" in r.json()["error"]
    assert "files: trajectories/step_000001, trajectories/step_000002" in r.json()["error"]  # what there is


def test_file_names_as_on_disk_or_omitted(served):
    """`file` may carry the .jsonl suffix; without it the latest training step is shown."""
    _, client = served
    r = client.get("/api/episodes", params={"file": STEP + ".jsonl", "limit": 1})
    assert r.status_code == 200 and r.json()["file"] == STEP
    r = client.get("/api/episodes", params={"limit": 1})
    assert r.status_code == 200 and r.json()["file"] == "trajectories/step_000003"
    r = client.get("/api/episode")
    assert r.status_code == 200 and r.json()["file"] == "trajectories/step_000003" and r.json()["index"] == 0
    r = client.get("/api/episodes", params={"file": STEP, "limit": 100000})
    assert r.status_code == 400 and "limit" in r.json()["error"]
    r = client.get("/api/episodes", params={"file": STEP, "filter": "maybe"})
    assert r.status_code == 400 and "filter" in r.json()["error"]
    r = client.get("/api/episode", params={"file": STEP, "index": 999})
    assert r.status_code == 404 and "120 episodes" in r.json()["error"]


def test_without_a_tokenizer_the_stored_texts_are_shown(tmp_path):
    run = write_sample_run(tmp_path / "plain", steps=1, episodes_per_step=3, tokenizer=False)
    with BackgroundViewer(run) as url:
        ep = httpx.get(url + "api/episode", params={"file": "trajectories/step_000001", "index": 0}).json()
    assert ep["decoded"] is False and ep["turns"][0]["model_tokens"] is None
    assert ep["turns"][0]["text"].startswith("Thought:") and ep["turns"][0]["model_token_count"] > 0


def test_port_in_use_is_a_clear_error(tmp_path):
    from agentgym_core.errors import AgentGymError

    run = write_sample_run(tmp_path / "r", steps=1, episodes_per_step=1)
    with BackgroundViewer(run) as url:
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        with pytest.raises(AgentGymError, match="pick another --port"):
            BackgroundViewer(run, port=port)
    shutil.rmtree(run)



def test_an_episode_scored_by_a_judge_shows_its_verdict(tmp_path, judge_episode):
    run = write_sample_run(tmp_path / "judged", steps=1, episodes_per_step=3, tokenizer=False)
    verdict = judge_episode(run)
    with BackgroundViewer(run) as url:
        judged = httpx.get(url + "api/episode", params={"file": "trajectories/step_000001", "index": 0}).json()
        plain = httpx.get(url + "api/episode", params={"file": "trajectories/step_000001", "index": 1}).json()
    assert judged["judge"] == verdict and plain["judge"] is None


def test_each_turn_shows_the_weights_version_that_sampled_it(tmp_path):
    """An asynchronous run's episodes carry ``Turn.version``; a synchronous run's do not (shown as null)."""
    run = write_sample_run(tmp_path / "async", steps=1, episodes_per_step=2, tokenizer=False)
    path = run / "trajectories" / "step_000001.jsonl"
    lines = path.read_text().splitlines()
    episode = json.loads(lines[0])
    for k, turn in enumerate(episode["turns"]):
        turn["version"] = 3 + k  # a partial rollout: the weights changed between its turns
    lines[0] = json.dumps(episode)
    path.write_text("\n".join(lines) + "\n")
    with BackgroundViewer(run) as url:
        versioned = httpx.get(url + "api/episode", params={"file": "trajectories/step_000001", "index": 0}).json()
        plain = httpx.get(url + "api/episode", params={"file": "trajectories/step_000001", "index": 1}).json()
    assert [t["version"] for t in versioned["turns"]] == [3 + k for k in range(len(episode["turns"]))]
    assert {t["version"] for t in plain["turns"]} == {None}
