"""The schedulers against hand-computed horizons, config validation and resume."""
import json

import pytest

from agentgym_core.config import build_component, load_config
from agentgym_core.errors import AgentGymError, ConfigError
from agentgym_scheduler_scaling import plugin
from agentgym_scheduler_scaling.schedulers import (
    AdaptiveScheduler,
    LinearScheduler,
    ScalingInterScheduler,
    SchedulerStateError,
)


@pytest.fixture
def manager(plugin_manager, register_plugin):
    register_plugin(plugin, name="scaling")
    return plugin_manager


def test_scaling_inter_is_exact_at_stage_boundaries():
    s = ScalingInterScheduler(rounds=[6, 13, 20], step_interval=100)
    expected = {0: 6, 1: 6, 99: 6, 100: 13, 101: 13, 199: 13, 200: 20, 299: 20, 300: 20, 10_000: 20}
    assert {step: s.max_turns(step) for step in expected} == expected
    assert s.stage == 0  # max_turns is pure; observe records the finished step's stage
    s.observe(150, {})
    assert s.stage == 1
    with pytest.raises(ValueError):
        s.max_turns(-1)


def test_scaling_inter_single_round_and_interval_one():
    assert [ScalingInterScheduler(rounds=[3], step_interval=1).max_turns(k) for k in range(3)] == [3, 3, 3]
    assert [ScalingInterScheduler(rounds=[1, 2, 5], step_interval=1).max_turns(k) for k in range(4)] == [1, 2, 5, 5]


def test_scaling_inter_state_survives_resume():
    a = ScalingInterScheduler(rounds=[2, 4, 8], step_interval=3)
    run = []
    for k in range(5):
        run.append(a.max_turns(k))
        a.observe(k, {"success_rate": 0.0})
    saved = json.loads(json.dumps(a.state_dict()))
    b = ScalingInterScheduler(rounds=[2, 4, 8], step_interval=3)
    b.load_state_dict(saved)
    assert b.stage == 1
    assert run + [b.max_turns(k) for k in range(5, 10)] == [a.max_turns(k) for k in range(10)]
    changed = ScalingInterScheduler(rounds=[2, 4], step_interval=3)
    with pytest.raises(SchedulerStateError, match="rounds=\\[2, 4, 8\\]"):
        changed.load_state_dict(saved)


@pytest.mark.parametrize("override, message", [
    ("scheduler.rounds=[]", "non-empty"),
    ("scheduler.rounds=[6,6,20]", "strictly increasing"),
    ("scheduler.rounds=[0,3]", "positive integers"),
    ("scheduler.step_interval=0", "step_interval must be an integer >= 1"),
    ("scheduler.rouns=[1,2]", "Did you mean 'rounds'"),
])
def test_scaling_inter_config_errors(manager, override, message):
    with pytest.raises(ConfigError, match=message.replace("[", "\\[")) as info:
        load_config(None, ["scheduler.name=scaling_inter", override], manager=manager)
    assert "scheduler" in str(info.value)


def test_scaling_inter_built_from_config(manager):
    cfg = load_config(None, ["scheduler.name=scaling_inter", "scheduler.rounds=[2,5]", "scheduler.step_interval=10"],
                      manager=manager)
    s = build_component(manager, "schedulers", cfg.scheduler)
    assert [s.max_turns(k) for k in (0, 9, 10, 50)] == [2, 2, 5, 5]


def test_linear_ramp_hand_computed():
    s = LinearScheduler(start=4, end=20, steps=8)  # +2 turns per step
    assert [s.max_turns(k) for k in range(10)] == [4, 6, 8, 10, 12, 14, 16, 18, 20, 20]
    s = LinearScheduler(start=5, end=8, steps=10)  # 5 + 3*k//10
    assert [s.max_turns(k) for k in (0, 3, 4, 6, 7, 9, 10, 11)] == [5, 5, 6, 6, 7, 7, 8, 8]
    down = LinearScheduler(start=10, end=2, steps=4)
    assert [down.max_turns(k) for k in range(6)] == [10, 8, 6, 4, 2, 2]


def test_linear_config_errors(manager):
    with pytest.raises(ConfigError, match="scheduler.steps must be an integer >= 1"):
        load_config(None, ["scheduler.name=linear", "scheduler.steps=0"], manager=manager)


def test_adaptive_raises_on_windowed_success_rate():
    s = AdaptiveScheduler(rounds=[3, 6, 9], window=3, threshold=0.5)
    horizons = []
    for step, rate in enumerate([0.0, 1.0, 0.4, 0.6, 0.2, 0.9, 0.9, 0.0, 1.0, 1.0]):
        horizons.append(s.max_turns(step))
        s.observe(step, {"success_rate": rate})
    # window means: steps 0-2 -> 0.467 (stay), 1-3 -> 0.667 (raise after step 3);
    # then 4-6 -> 0.667 (raise after step 6); last stage stays.
    assert horizons == [3, 3, 3, 3, 6, 6, 6, 9, 9, 9]
    assert s.changes == [[3, 1], [6, 2]]


def test_adaptive_state_restored_by_load_state_dict():
    a = AdaptiveScheduler(rounds=[2, 4, 6], window=2, threshold=0.75)
    for step, rate in enumerate([1.0, 1.0, 1.0]):
        a.observe(step, {"success_rate": rate})
    saved = json.loads(json.dumps(a.state_dict()))
    assert saved["stage"] == 1 and saved["recent"] == [1.0]
    b = AdaptiveScheduler(rounds=[2, 4, 6], window=2, threshold=0.75)
    b.load_state_dict(saved)
    assert b.max_turns(3) == 4
    for sched in (a, b):
        sched.observe(3, {"success_rate": 0.5})  # window [1.0, 0.5] -> 0.75 -> raise
    assert a.max_turns(4) == b.max_turns(4) == 6
    with pytest.raises(SchedulerStateError, match="stage 5"):
        b.load_state_dict({"stage": 5})


def test_adaptive_missing_metric_is_explained():
    s = AdaptiveScheduler(rounds=[2, 4], window=1)
    with pytest.raises(AgentGymError, match="no 'success_rate' .*got: reward"):
        s.observe(0, {"reward": 1.0})


def test_adaptive_config_errors(manager):
    with pytest.raises(ConfigError, match="threshold must be in \\[0, 1\\]"):
        load_config(None, ["scheduler.name=adaptive", "scheduler.threshold=1.5"], manager=manager)
    cfg = load_config(None, ["scheduler.name=adaptive", "scheduler.window=4"], manager=manager)
    assert build_component(manager, "schedulers", cfg.scheduler).window == 4
