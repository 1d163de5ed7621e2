"""``agentgym train`` on ecommerce: two steps with a tiny random model write the usual run directory."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from agentgym_env_ecommerce.env import ECommerceServiceEnv

pytest.importorskip("agentgym_trainer_rl")
pytestmark = pytest.mark.slow

ENV = dict(os.environ, OMP_NUM_THREADS="1", AGENTGYM_LOAD_PLUGINS="ecommerce,hf,rl")


def overrides(model, out) -> list[str]:
    items = {
        "run.name": "shop", "run.output_dir": str(out), "run.seed": "7",
        "model.path": str(model), "model.max_context": "2048",
        "env.name": "ecommerce", "env.intents": "[cancel,order_status]", "env.max_turns": "4",
        "engine.name": "hf", "scheduler.name": "fixed", "scheduler.turns": "3",
        "rollout.tasks_per_step": "2", "rollout.group_size": "2", "rollout.max_new_tokens": "16",
        "rollout.max_episode_tokens": "2048", "rollout.dump_trajectories": "true",
        "eval.tasks": "2", "eval.before": "false", "eval.after": "false",
        "trainer.name": "rl", "trainer.steps": "2", "trainer.lr": "1e-3", "trainer.finetune": "full",
        "trainer.save_every": "1", "trainer.keep_checkpoints": "0", "trainer.local_envs": "true",
        "trainer.progress": "false",
    }
    return [f"{k}={v}" for k, v in items.items()]


def test_train_two_steps_writes_the_run_directory(tiny_model, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "agentgym_core.cli.main", "train", *overrides(tiny_model, tmp_path)],
                          env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = tmp_path / "shop"
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2] and all(r.get("env_failures", 0) == 0 for r in rows)
    assert "name: ecommerce" in (run / "config.yaml").read_text()
    assert (run / "checkpoints" / "step_000002" / "config.json").exists()
    episodes = [json.loads(line) for line in (run / "trajectories" / "step_000001.jsonl").read_text().splitlines()]
    env = ECommerceServiceEnv(intents=["cancel", "order_status"])
    assert len(episodes) == 4 and all(e["env_name"] == "ecommerce" and not e["failed"] for e in episodes)
    assert {e["task_id"] for e in episodes} <= set(env.splits()["train"])
    assert all(e["turns"] and e["turns"][0]["observation"] for e in episodes)  # the env answered every turn
