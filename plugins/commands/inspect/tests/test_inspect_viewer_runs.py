"""Reading run directories: incremental byte-offset indexes, checkpoints, eval results."""
from __future__ import annotations

import json

import pytest

from agentgym_inspect.runs import Run, RunDirError, is_run_dir, load_summary, step_of
from agentgym_inspect.viewer.sample import write_sample_run


def test_index_grows_with_appended_lines_and_skips_partial_ones(tmp_path):
    (tmp_path / "trajectories").mkdir()
    f = tmp_path / "trajectories" / "step_000001.jsonl"
    f.write_text(json.dumps({"episode_id": "a", "success": True, "score": 1.0, "turns": [{}, {}]}) + "\n")
    run = Run(tmp_path)
    idx = run.trajectory_index("trajectories/step_000001")
    assert [e.episode_id for e in idx.episodes] == ["a"] and idx.episodes[0].turns == 2
    with open(f, "a") as out:
        out.write("garbage\n" + json.dumps({"episode_id": "b"}) + "\n" + '{"episode_id": "c"')  # c is half written
    idx = run.trajectory_index("trajectories/step_000001")
    assert [e.episode_id for e in idx.episodes] == ["a", "b"] and idx.bad_lines == 1
    with open(f, "a") as out:
        out.write("}\n")
    assert run.trajectory_index("trajectories/step_000001").read(2)["episode_id"] == "c"
    f.write_text(json.dumps({"episode_id": "z"}) + "\n")  # rewritten shorter: re-indexed
    assert [e.episode_id for e in run.trajectory_index("trajectories/step_000001").episodes] == ["z"]
    f.write_text("".join(json.dumps({"episode_id": f"n{i}", "pad": "x" * 50}) + "\n" for i in range(3)) + "[1]\n")
    idx = run.trajectory_index("trajectories/step_000001")  # rewritten longer: re-indexed too
    assert [e.episode_id for e in idx.episodes] == ["n0", "n1", "n2"] and idx.bad_lines == 1
    with pytest.raises(RunDirError):
        run.trajectory_index("trajectories/../config")


def test_checkpoints_latest_and_tokenizer(tmp_path):
    run = Run(write_sample_run(tmp_path / "r", steps=7, episodes_per_step=2, checkpoint_every=3))
    assert [p.name for p in run.checkpoints()] == ["step_000003", "step_000006", "step_000007"]
    assert run.latest_checkpoint().name == "step_000007"
    (run.path / "checkpoints" / "latest").write_text("step_000006\n")
    assert run.latest_checkpoint().name == "step_000006"
    (run.path / "checkpoints" / "latest").unlink()
    (run.path / "checkpoints" / "latest").symlink_to("step_000003")
    assert run.latest_checkpoint().name == "step_000003"
    assert (run.tokenizer_dir() / "tokenizer.json").is_file()
    assert step_of("trajectories/step_000012") == 12 and step_of("eval/before") is None
    (run.path / "checkpoints" / ".tmp-step_000009").mkdir()  # a checkpoint being written
    assert [p.name for p in run.checkpoints()][-1] == "step_000007" and step_of(".tmp-step_000009") is None
    assert is_run_dir(run.path) and not is_run_dir(tmp_path)


def test_missing_pieces_are_clear(tmp_path):
    with pytest.raises(RunDirError, match="does not exist"):
        Run(tmp_path / "nope")
    (tmp_path / "metrics.jsonl").write_text("")
    run = Run(tmp_path)
    assert run.latest_checkpoint() is None
    with pytest.raises(RunDirError, match="no checkpoint"):
        run.require_checkpoint()
    assert run.metrics() == [] and run.eval_results() == {} and run.trajectory_files() == []


def test_eval_results_accept_wrapped_summaries(tmp_path):
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "after.json").write_text(json.dumps({"summary": {"k": 1, "overall": {"n": 3}}}))
    (tmp_path / "eval" / "before.json").write_text(json.dumps({"k": 1, "overall": {"n": 2}}))
    (tmp_path / "eval" / "junk.json").write_text("[1, 2]")
    assert list(Run(tmp_path).eval_results()) == ["before", "after"]
    assert load_summary(tmp_path / "eval" / "junk.json") is None


def test_fast_index_parse_agrees_with_full_parse(tmp_path):
    from agentgym_inspect.runs import parse_for_index

    run = write_sample_run(tmp_path / "r", steps=2, episodes_per_step=20, seed=5)
    for line in (run / "trajectories" / "step_000002.jsonl").read_bytes().splitlines(keepends=True):
        full = json.loads(line)
        data, tokens, generated = parse_for_index(line)
        assert (tokens, generated) == (len(full["token_ids"]), sum(full["loss_mask"]))
        assert data["turns"] == full["turns"] and data["token_ids"] == []
    odd = json.dumps({"episode_id": "x", "token_ids": [1, 2], "loss_mask": [0, 1], "turns": [{"text": '"token_ids": [9]'}]})
    data, tokens, generated = parse_for_index(odd.encode())
    assert (tokens, generated) == (2, 1) and data["turns"][0]["text"] == '"token_ids": [9]'
    compact = json.dumps({"token_ids": [1, 2, 3], "loss_mask": [1, 1, 0]}, separators=(",", ":")).encode()
    assert parse_for_index(compact)[1:] == (3, 2)
    data, tokens, generated = parse_for_index(json.dumps({"token_ids": [1, 2, 3]}).encode())  # no mask: parsed whole
    assert (tokens, generated) == (None, None) and data["token_ids"] == [1, 2, 3]
