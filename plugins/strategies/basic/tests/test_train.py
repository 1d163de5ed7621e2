"""``agentgym train`` on reflective episodes: every attempt is trained, all attempts of a task in its group."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("agentgym_trainer_rl")
pytest.importorskip("agentgym_env_ecommerce")
pytestmark = pytest.mark.slow

ENV = dict(os.environ, OMP_NUM_THREADS="1", AGENTGYM_LOAD_PLUGINS="ecommerce,hf,rl,strategies")


def test_train_on_reflective_episodes(model_dir, tmp_path):
    items = {
        "run.name": "reflect", "run.output_dir": str(tmp_path), "run.seed": "7",
        "model.path": str(model_dir), "model.max_context": "2048",
        "env.name": "ecommerce", "env.intents": "[cancel,order_status]", "env.max_turns": "4",
        "agent.strategy.name": "reflect", "agent.strategy.attempts": "2", "agent.strategy.max_tokens": "8",
        "engine.name": "hf", "scheduler.name": "fixed", "scheduler.turns": "2",
        "rollout.tasks_per_step": "2", "rollout.group_size": "2", "rollout.max_new_tokens": "12",
        "rollout.max_episode_tokens": "2048", "eval.tasks": "2", "eval.before": "false", "eval.after": "true",
        "trainer.name": "rl", "trainer.algorithm": "grpo", "trainer.steps": "2", "trainer.finetune": "full",
        "trainer.save_every": "2", "trainer.local_envs": "true", "trainer.progress": "false",
    }
    proc = subprocess.run([sys.executable, "-m", "agentgym_core.cli.main", "train",
                           *[f"{k}={v}" for k, v in items.items()]],
                          env=ENV, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = tmp_path / "reflect"
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    episodes = [json.loads(line) for line in (run / "trajectories" / "step_000001.jsonl").read_text().splitlines()]
    chains: dict[str, list] = {}
    for e in episodes:
        chains.setdefault(e["first_episode_id"], []).append(e)
    assert len(chains) == 4  # 2 tasks x 2 samples; a random model fails, so each has a second attempt
    for attempts in chains.values():
        assert [e["attempt"] for e in attempts] == [1, 2] and not any(e["success"] for e in attempts)
        assert len({(e["task_id"], e["group_id"]) for e in attempts}) == 1  # one task, one group
        assert attempts[1]["memory"] and not attempts[0]["memory"]
    assert rows[0]["episodes"] == len(episodes) == 8
    after = json.loads((run / "eval" / "after.json").read_text())
    assert after["meta"]["strategy"] == "reflect" and set(after["attempts"]) == {"1", "2"}
    assert "name: reflect" in (run / "config.yaml").read_text()
