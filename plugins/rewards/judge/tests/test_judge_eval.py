"""The judge in evaluation and around a run, through the real CLI: `agentgym eval` (an expert, a model) prints
the judged score and writes the verdicts into the episodes' file, the viewer shows them, `agentgym compare`
draws them, a training run's cache survives `--resume`, and closing the run's parts closes the judge."""
import asyncio
import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from agentgym_core.assembly import RunParts
from agentgym_reward_judge.reward import JudgeReward

CLI = [sys.executable, "-m", "agentgym_core.cli.main"]


def _agentgym(*args, cwd, timeout=300):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTGYM_")} | {"OMP_NUM_THREADS": "1"}
    proc = subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=timeout, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc


def _judged_config(path, server, *, extra=""):
    path.write_text(textwrap.dedent(f"""\
        env: {{name: ecommerce}}
        rewards:
          - {{name: success, weight: 1.0}}
          - name: judge
            weight: 0.5
            rubric: satisfaction
            judge: {{url: "{server.url}", model: scripted, attempts: 2, backoff: 0.01}}
        """) + extra)
    return path


def _task_of(kit, prompt):
    """The task the judge was shown (the data block is the episode as JSON)."""
    return json.loads(kit.data_blocks(prompt)[0])["task"]


def _run_folder(path):
    """A folder the viewer and compare take as a run (they need metrics.jsonl, checkpoints/ or trajectories/)."""
    (path / "eval").mkdir(parents=True)
    (path / "metrics.jsonl").write_text("")
    return path


def test_agentgym_eval_prints_the_judged_score_beside_success(judge_server, kit, tmp_path):
    """`agentgym eval --expert reference` on ecommerce with the judge reward: the scripted judge scores an episode 4
    of 5 when it was shown the customer's opening message as the task; the table is followed by the judged line,
    the summary and the episodes' file carry the verdicts, and the viewer shows the judge's raw answer."""
    pytest.importorskip("agentgym_env_ecommerce")
    judge_server.reply = lambda prompt, body: {"score": 4 if _task_of(kit, prompt).startswith("Customer:") else 1,
                                               "reason": "helpful"}
    config = _judged_config(tmp_path / "judged.yaml", judge_server)
    run = _run_folder(tmp_path / "run")
    out = run / "eval" / "after.json"
    proc = _agentgym("eval", "-c", config, "--expert", "reference", "--tasks", "3", "--max-turns", "40", "--out", out,
                     cwd=tmp_path)
    assert ("Judged (judge:satisfaction): mean reward 0.750 (std 0.000) over 3 episodes; 3 verdicts parsed, mean "
            "score 4.00, 0 parse failures") in proc.stdout, proc.stdout
    assert "3 judge requests, 0 cache hits" in proc.stdout
    summary = json.loads(out.read_text())
    assert summary["overall"]["success_rate"] == 1.0
    judged = summary["judged"]["judge:satisfaction"]
    assert (judged["n"], judged["judged"], judged["reward_mean"], judged["cost"]["requests"]) == (3, 3, 0.75, 3)
    episodes = [json.loads(line) for line in out.with_suffix(".jsonl").read_text().splitlines()]
    assert [e["turns"][-1]["info"]["judge"]["score"] for e in episodes] == [4, 4, 4]
    assert len(judge_server.requests) == 3

    pytest.importorskip("agentgym_inspect")
    import httpx

    from agentgym_inspect.viewer.server import BackgroundViewer

    with BackgroundViewer(run) as url, httpx.Client(base_url=url, timeout=10) as client:
        files = [f["key"] for f in client.get("/api/run").json()["files"]]
        assert "eval/after" in files
        ep = client.get("/api/episode", params={"file": "eval/after", "index": 0}).json()
    assert ep["judge"]["raw"] == '{"score": 4, "reason": "helpful"}'
    assert (ep["judge"]["score"], ep["judge"]["reward"], ep["judge"]["rubric"]) == (4, 0.75, "satisfaction")


def test_a_model_evaluation_writes_the_verdicts_into_its_episodes(judge_server, kit, tmp_path, hf_tiny_model_dir):
    """`agentgym eval --model` (a tiny random model, 2 turns): the episodes' file is written after the judge, so each
    line carries its verdict; with ``tokenizer`` the judge reads the task decoded from the prompt."""
    pytest.importorskip("agentgym_env_ecommerce")
    pytest.importorskip("agentgym_engine_hf")
    judge_server.reply = lambda prompt, body: {"score": 5 if "Customer:" in _task_of(kit, prompt) else 1}
    config = _judged_config(tmp_path / "judged.yaml", judge_server)
    config.write_text(config.read_text().replace("rubric: satisfaction", "rubric: satisfaction\n    combine: none\n"
                                                 f"    tokenizer: {hf_tiny_model_dir}"))
    out = tmp_path / "eval.json"
    proc = _agentgym("eval", "-c", config, "--model", hf_tiny_model_dir, "--tasks", "2", "--max-turns", "2", "--local",
                     "--out", out, "rollout.max_new_tokens=8", "engine.threads=1", "model.dtype=fp32", cwd=tmp_path)
    assert "Judged (judge:satisfaction): mean reward 1.000 (std 0.000) over 2 episodes; 2 verdicts parsed" in proc.stdout
    episodes = [json.loads(line) for line in out.with_suffix(".jsonl").read_text().splitlines()]
    assert len(episodes) == 2 and all(e["success"] is False for e in episodes)  # combine: none, judged anyway
    assert [e["turns"][-1]["info"]["judge"]["raw"] for e in episodes] == ['{"score": 5}'] * 2
    assert len(judge_server.requests) == 2


def test_agentgym_compare_draws_the_judged_scores(judge_server, kit, tmp_path):
    """Two evaluated runs, judged 4 and 2 of 5: `agentgym compare` draws judged.png and tabulates both; `agentgym
    eval --compare` sets the judged rows beside success."""
    pytest.importorskip("agentgym_env_ecommerce")
    pytest.importorskip("agentgym_inspect")
    config = _judged_config(tmp_path / "judged.yaml", judge_server)
    runs = []
    for name, score in (("good", 4), ("poor", 2)):
        judge_server.reply = lambda prompt, body, score=score: {"score": score}
        run = _run_folder(tmp_path / "runs" / name)
        (run / "config.yaml").write_text(f"run: {{name: {name}}}\nnote: {name}\n")  # two experiments, not two seeds
        _agentgym("eval", "-c", config, "--expert", "reference", "--tasks", "2", "--max-turns", "40",
                  "--out", run / "eval" / "after.json", cwd=tmp_path)
        runs.append(run)
    proc = _agentgym("compare", *runs, "--out", tmp_path / "cmp", cwd=tmp_path)
    assert "judge:satisfaction: the evaluations' judged scores are in judged.png" in proc.stdout
    data = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert data["judged"]["judge:satisfaction"] == {"good": {"after": [0.75]}, "poor": {"after": [0.25]}}
    assert (tmp_path / "cmp" / "judged.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (tmp_path / "cmp" / "compare.md").read_text()
    assert "| good | good | 0.750 (2/2 parsed) |" in md and "| poor | poor | 0.250 (2/2 parsed) |" in md
    table = _agentgym("eval", "--compare", *runs, cwd=tmp_path).stdout
    assert "| judge:satisfaction reward | 0.750 (0.000) | 0.250 (0.000) |" in table


def test_closing_the_run_parts_closes_the_judge(judge_server, kit):
    """RunParts.aclose (the end of a training run, `agentgym eval`, `agentgym rollout`) closes the rewards: the judge's
    connections and its event-loop thread end; a later verdict opens them again."""
    def judge_threads():  # (other tests' judges may be ending theirs meanwhile: only new ones count)
        return {t for t in threading.enumerate() if t.name == "agentgym-judge"}

    before = judge_threads()
    r = JudgeReward(judge=kit.settings(judge_server))
    parts = RunParts(pool=None, env=None, rewards=[(r, 1.0)])
    parts.score([kit.episode("x")])
    (mine,) = judge_threads() - before
    assert mine.is_alive() and r.judge._client is not None
    asyncio.run(parts.aclose())
    assert not mine.is_alive() and r.judge._client is None
    assert r(kit.episode("y")) == [0.5] and len(judge_server.requests) == 2  # usable again
    (again,) = judge_threads() - before
    r.close()
    r.close()  # twice is harmless
    assert not again.is_alive()


@pytest.mark.slow
def test_a_resumed_training_run_asks_nothing_twice(judge_server, kit, tmp_path, hf_tiny_model_dir):
    """`agentgym train` with the judge (rl, a tiny model, lr 1e-12: updates below fp32 resolution, so the policy stays the same) evaluates after its
    step; `--resume` for a second step evaluates the same tasks again, and the judge is asked nothing for them: the
    verdicts come from <run>/judge/cache.jsonl, written by the first process."""
    pytest.importorskip("agentgym_trainer_rl")
    pytest.importorskip("agentgym_env_babyai")
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "trainers" / "rl" / "tests"))
    from rl_helpers import tiny_config

    judge = json.dumps({"url": judge_server.url, "model": "scripted", "attempts": 2, "backoff": 0.01})
    args = tiny_config(hf_tiny_model_dir, tmp_path / "runs", "judged", **{
        "trainer.steps": "1", "trainer.lr": "1e-12", "eval.after": "true", "eval.tasks": "2", "model.dtype": "fp32",
        "rewards": f"[{{name: success, weight: 1.0}}, {{name: judge, weight: 0.5, combine: none, judge: {judge}}}]"})
    _agentgym("train", *args, cwd=tmp_path, timeout=600)
    run = tmp_path / "runs" / "judged"
    first = json.loads((run / "eval" / "after.json").read_text())["judged"]["judge:satisfaction"]
    assert first["cost"]["requests"] >= 1 and first["judged"] == 2
    asked = len(judge_server.requests)
    cached = (run / "judge" / "cache.jsonl").read_text().splitlines()
    assert len(cached) == asked                       # every verdict of the run is in its cache file
    assert not any("not recorded" in p for p in judge_server.prompts())  # the task, decoded with the run's model
    _agentgym("train", "--resume", run, "trainer.steps=2", cwd=tmp_path, timeout=600)
    again = json.loads((run / "eval" / "after.json").read_text())["judged"]["judge:satisfaction"]
    assert again["cost"]["requests"] == 0 and again["cost"]["cache_hits"] >= 1 and again["judged"] == 2
    assert again["reward_mean"] == first["reward_mean"]
    step2 = [json.loads(line) for line in (run / "trajectories" / "step_000002.jsonl").read_text().splitlines()]
    assert all("judge" in e["turns"][-1]["info"] for e in step2)  # the training step's episodes carry verdicts too
