"""Training agents written with the ``openai`` client: the examples, unchanged, under the rl trainer (tiny model).

The summarizing example rewrites its history between calls, so its episodes are several training segments;
the update must score every reply under the exact prompt it was sampled from, which the trainer's own check
says: its log-probs of the sampled tokens equal the engine's (``sampler_logp_diff``, fp32 both sides).
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("openai")
pytest.importorskip("agentgym_trainer_rl")
pytestmark = pytest.mark.slow

from agentgym_core import BaseEnv  # noqa: E402

ROOT = Path(__file__).parents[4]
EXAMPLES = ROOT / "examples" / "openai_agent"


class ParityEnv(BaseEnv):
    """Succeeds when the agent's actions add up to an even number of characters: rewards vary within a group."""

    instruction = "Say anything."
    action_format = "free"

    def reset(self, *, task_id=None, seed=None):
        self.n, self.chars = 0, 0
        return f"Task {task_id}: speak."

    def step(self, action):
        self.n += 1
        self.chars += len(action)
        done = self.n >= 2
        ok = done and self.chars % 2 == 0
        return f"You said {len(action)} characters.", float(ok), done, {"success": ok}

    def splits(self):
        return {"train": list(range(8)), "test": list(range(8, 12))}


class ParityPlugin:
    @staticmethod
    def register_envs(registry):
        registry.add("parity", f"{__name__}:ParityEnv")


def _weights(folder: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(next(folder.glob("*.safetensors"))))


def _train(tmp_path: Path, plugin_manager, register_plugin, *extra: str) -> tuple[Path, Path]:
    """Train the summarizing example on the parity env (tiny model, fp32); returns (model folder, run folder)."""
    from agentgym_external import plugin as external
    from agentgym_hf.testing import tiny_model_dir

    from agentgym_core import hookimpl
    from agentgym_core.config import build_component, load_config

    ParityPlugin.register_envs = hookimpl(ParityPlugin.register_envs)
    register_plugin(ParityPlugin, "parity")
    register_plugin(external, "external")
    for mod in ("agentgym_engine_hf.plugin", "agentgym_trainer_rl.plugin"):
        register_plugin(__import__(mod, fromlist=["x"]), mod)
    model = tiny_model_dir(tmp_path)
    cfg = load_config(None, [
        "run.name=ext", f"run.output_dir={tmp_path / 'runs'}", "run.seed=3", f"model.path={model}", "model.dtype=fp32",
        "model.max_context=1024", "env.name=parity", "engine.name=hf", "scheduler.name=fixed", "scheduler.turns=3",
        "agent.strategy.name=external", f"agent.strategy.agent={EXAMPLES / 'summarizing.py'}:solve",
        "agent.strategy.timeout=600", "rollout.tasks_per_step=2", "rollout.group_size=4", "rollout.max_new_tokens=6",
        "eval.before=false", "eval.after=false", "trainer.name=rl", "trainer.algorithm=grpo", "trainer.steps=1",
        "trainer.finetune=full", "trainer.lr=1e-2", "trainer.ppo_epochs=2", "trainer.save_every=1",
        "trainer.local_envs=true", "trainer.progress=false", *extra], plugin_manager)
    build_component(plugin_manager, "trainers", cfg.trainer, cfg, plugin_manager).fit()
    return model, tmp_path / "runs" / "ext"


def test_a_grpo_step_on_a_history_rewriting_agent(tmp_path, plugin_manager, register_plugin, force_cpu_bf16):
    force_cpu_bf16(False)
    model, run = _train(tmp_path, plugin_manager, register_plugin)
    row = json.loads((run / "metrics.jsonl").read_text().splitlines()[0])
    assert row["episodes"] == 8 and row["env_failures"] == 0
    assert math.isfinite(row["loss"]) and row["loss"] != 0.0, row
    assert row["segments_per_episode"] > 1  # the summaries broke the prefix: segments
    # every reply was scored under the prompt it was sampled from
    assert row["sampler_logp_diff"] <= 1e-4 and row["sampler_logp_diff_max"] <= 1e-3, row
    before, after = _weights(model), _weights(run / "checkpoints" / "step_000001")
    assert any(not bool((before[k] == after[k]).all()) for k in before), "the policy did not change"
    episodes = [json.loads(x) for x in (run / "trajectories" / "step_000001.jsonl").read_text().splitlines()]
    assert all(e["transcript"][-1]["role"] == "assistant" for e in episodes)
    assert any(t.get("context") for e in episodes for t in e["turns"])


def test_an_external_agent_trains_in_the_pipelined_asynchronous_mode(tmp_path, plugin_manager, register_plugin,
                                                                     force_cpu_bf16):
    """trainer.max_staleness=1: the rollout worker serves the agent its own policy endpoint (its thread, its loop);
    step 2's episodes are sampled by version 1 while step 1 trains, each call stamped with that version and
    scored under the prompt it was sent with."""
    force_cpu_bf16(False)
    _, run = _train(tmp_path, plugin_manager, register_plugin, "trainer.max_staleness=1", "trainer.steps=3")
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["episodes"] for r in rows] == [8, 8, 8] and all(r["env_failures"] == 0 for r in rows)
    assert all(r["staleness_max"] <= 1 for r in rows) and rows[1]["staleness_max"] == 1
    # step 1 was sampled by the weights it trains (version 0): each call scored under the prompt it was sent
    # with gives the engine's log-probs; later steps are a version behind, corrected by TIS (tis_cap 2)
    assert rows[0]["sampler_logp_diff"] <= 1e-4 < rows[1]["sampler_logp_diff"], rows
    for step, version in ((1, 0), (2, 0), (3, 1)):  # batch s is sampled by version max(0, s - 1 - K)
        episodes = [json.loads(x) for x in (run / "trajectories" / f"step_{step:06d}.jsonl").read_text().splitlines()]
        assert {t["version"] for e in episodes for t in e["turns"]} == {version}, step


def test_agentgym_train_runs_the_tool_calling_example_unchanged(tmp_path):
    """``agentgym train`` with the example's config file: the plugin is found by its entry point."""
    pytest.importorskip("agentgym_env_babyai")
    from agentgym_hf.testing import tiny_model_dir

    items = {
        "run.name": "example", "run.output_dir": str(tmp_path), "model.path": str(tiny_model_dir(tmp_path)),
        "model.dtype": "fp32", "agent.strategy.agent": f"{EXAMPLES / 'agent.py'}:solve", "trainer.steps": "1",
        "rollout.tasks_per_step": "2", "rollout.group_size": "2", "rollout.max_new_tokens": "8",
        "eval.before": "false", "eval.tasks": "2", "trainer.save_every": "0", "trainer.progress": "false",
        "engine.max_batch_size": "4",
    }
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", "agentgym_core.cli.main", "train", "-c",
                           str(ROOT / "configs" / "quickstart.yaml"), "-c", str(EXAMPLES / "external.yaml"),
                           *[f"{k}={v}" for k, v in items.items()]], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = tmp_path / "example"
    row = json.loads((run / "metrics.jsonl").read_text().splitlines()[0])
    assert row["episodes"] == 4 and row["env_failures"] == 0 and math.isfinite(row["loss"])
    after = json.loads((run / "eval" / "after.json").read_text())
    assert after["meta"]["strategy"] == "external"
    episodes = [json.loads(x) for x in (run / "trajectories" / "step_000001.jsonl").read_text().splitlines()]
    tools = [m for m in episodes[0]["transcript"] if m["role"] == "system"]
    assert "act" in json.dumps(episodes[0]["transcript"]) or tools  # it offered its tool
