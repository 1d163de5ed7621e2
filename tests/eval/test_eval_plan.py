"""``plan_evaluation``: the one set of rules ``agentgym eval`` and the trainer's before/after use; the
max_turns they play is resolved once, by ``final_max_turns`` (``RunParts.final_max_turns``)."""
from __future__ import annotations

import pytest

from agentgym_core.assembly import RunParts, final_max_turns
from agentgym_core.defaults.components import FixedScheduler
from agentgym_core.env.spec import EnvSpec
from agentgym_core.evaluation import EvalPlan, plan_evaluation
from agentgym_core.config_schema import EvalSection, RolloutSection

EVAL = vars(EvalSection(tasks=4, k=1))
ROLLOUT = vars(RolloutSection(temperature=0.8))


def test_greedy_with_several_samples_samples_at_the_rollout_temperature_and_says_so():
    plan = plan_evaluation({**EVAL, "k": 3}, ROLLOUT, final_max_turns(FixedScheduler(turns=5)))
    assert (plan.k, plan.temperature, plan.max_turns, plan.tasks, plan.split) == (3, 0.8, 5, 4, "test")
    assert plan.notice == "k=3 samples per task: sampling at the rollout temperature 0.8 (greedy would repeat one episode)"
    env = EnvSpec(name="e", instruction="", action_format="free", splits={"test": range(4)})
    assert plan.meta(model="m", env=env) == {"model": "m", "env": "e", "split": "test", "k": 3}
    plugin = EnvSpec(name="e", instruction="", action_format="free", splits={}, distribution="my-env", version="1.2")
    assert plan.meta(model="m", env=plugin)["env_plugin"] == "my-env 1.2"


def test_explicit_values_are_kept():
    plan = plan_evaluation(EVAL, ROLLOUT, 7, k=2, temperature=0.0, split="train", tasks=0)
    assert plan == EvalPlan(split="train", k=2, tasks=0, temperature=0.0, max_turns=7, notice=None)
    assert plan_evaluation(EVAL, ROLLOUT, 5).notice is None  # k=1: greedy is fine


def test_final_max_turns_is_the_schedulers_last_in_its_current_state():
    scaling = pytest.importorskip("agentgym_scheduler_scaling.schedulers")
    assert final_max_turns(scaling.ScalingInterScheduler(rounds=[2, 4, 6], step_interval=10)) == 6
    adaptive = scaling.AdaptiveScheduler(rounds=[2, 4, 6], window=1, threshold=0.5)
    parts = RunParts(pool=None, env=None, scheduler=adaptive)  # what eval, demos and infer read
    assert parts.final_max_turns == 2
    adaptive.observe(0, {"success_rate": 1.0})  # the stage reached during training
    assert parts.final_max_turns == 4


def test_agentgym_eval_takes_the_adaptive_stage_from_the_checkpoint(tmp_path):
    pytest.importorskip("agentgym_scheduler_scaling")
    import json

    from agentgym_core.assembly import checkpoint_scheduler
    from agentgym_core.config import load_config
    from agentgym_core.plugins import get_plugin_manager

    manager = get_plugin_manager()
    cfg = load_config([], ["scheduler.name=adaptive", "scheduler.rounds=[2,4,6]"], manager=manager)
    ckpt = tmp_path / "step_000010"
    ckpt.mkdir()
    (ckpt / "trainer_state.json").write_text(json.dumps({"scheduler": {"stage": 1, "recent": [], "rounds": [2, 4, 6]}}))
    assert final_max_turns(checkpoint_scheduler(cfg, manager, str(ckpt))) == 4
    assert final_max_turns(checkpoint_scheduler(cfg, manager, str(tmp_path))) == 2  # not a checkpoint: fresh state
