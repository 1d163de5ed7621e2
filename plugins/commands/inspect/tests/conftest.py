"""Fixtures: ``judge_episode``, which puts a model judge's verdict into an episode of a run's trajectory file."""
import json

import pytest

#: A verdict as the judge reward (agentgym-reward-judge) leaves it in the last turn's ``info["judge"]``.
VERDICT = {"rubric": "satisfaction", "model": "openai:judge", "mode": "absolute", "parsed": True, "cached": False,
           "raw": '{"score": 4, "reason": "handled, with one slip"}', "score": 4, "reward": 0.75,
           "reason": "handled, with one slip"}


@pytest.fixture
def judge_episode():
    """``judge_episode(run, key="trajectories/step_000001", index=0, verdict=VERDICT)``: put *verdict* into
    episode *index* of file *key*, as the judge reward does; returns the verdict."""
    def put(run, key="trajectories/step_000001", index=0, verdict=VERDICT):
        path = run / f"{key}.jsonl"
        lines = path.read_text().splitlines()
        episode = json.loads(lines[index])
        episode["turns"][-1]["info"]["judge"] = verdict
        lines[index] = json.dumps(episode)
        path.write_text("\n".join(lines) + "\n")
        return verdict

    return put
