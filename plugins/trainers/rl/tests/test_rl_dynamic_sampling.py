"""Groups without signal: which groups dynamic sampling keeps (hand-made groups), its metrics, and the warnings."""
from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from agentgym_core.rollout.trajectory import Trajectory
from agentgym_trainer_rl.sampling import SignalWatch, informative_groups, keep_groups

sys.path.insert(0, str(Path(__file__).parent))


def traj(group: int, rewards: list[float], failed: bool = False, success: bool = False) -> Trajectory:
    return Trajectory(episode_id=f"g{group}-{len(rewards)}-{sum(rewards)}", env_name="x", task_id=group, group_id=group,
                      token_ids=[], loss_mask=[], logprobs=[], prompt_len=0, rewards=rewards, failed=failed,
                      success=success)


def test_informative_groups_by_hand():
    trajs = [
        traj(0, [1.0]), traj(0, [0.0]),            # differ: signal
        traj(1, [0.0]), traj(1, [0.0]),            # all failed alike: none
        traj(2, [1.0]), traj(2, [1.0]),            # all succeeded alike: none
        traj(3, [1.0]), traj(3, [0.0], failed=True),  # one usable episode: no baseline, none
        traj(4, [0.5, 0.5]), traj(4, [0.0, 1.0]),  # same return, other turn rewards
        traj(5, [0.3]), traj(5, [0.3 + 1e-9]),     # equal within float noise
    ]
    assert informative_groups(trajs, "episode") == {0}
    assert informative_groups(trajs, "turn") == {0, 4}


def test_keep_groups_in_play_order_up_to_the_limit():
    trajs = [traj(g, [float(i)]) for g in (3, 0, 7, 5) for i in range(2)]
    kept = keep_groups(trajs, {0, 5, 7}, 2)
    assert [t.group_id for t in kept] == [0, 0, 7, 7]


def test_signal_watch_speaks_first_then_every_tenth_step():
    watch = SignalWatch("grpo")
    lines = [watch.no_signal(s, [traj(0, [0.0])], 4, dynamic=False) for s in range(21)]
    said = [i for i, line in enumerate(lines) if line]
    assert said == [0, 9, 19]
    assert "in all 4 task groups every episode got the same reward" in lines[0]
    assert "grpo's advantages are all 0" in lines[0] and "trainer.dynamic_sampling=true" in lines[0]
    assert "in each of the last 10 steps" in lines[9]
    watch.signal()  # a step with signal starts the count again
    line = watch.no_signal(30, [], 4, dynamic=True)
    assert line and "trainer.dynamic_sampling=true" not in line  # already on: not suggested
    assert "a format reward that varies" in line
    has_format = SignalWatch("grpo", rewards=("success", "format")).no_signal(0, [], 4, dynamic=True)
    assert "a format reward that varies" not in has_format and "the format reward this run has" in has_format
    capped = SignalWatch("grpo")
    said = [s for s in range(12) if capped.capped(s, 2, 1, 4, 0.0)]
    assert said == [2, 9]  # the third step in a row, then every tenth


def _run(tmp_path, **extra):
    """A short in-process rl run of the tiny model (it never succeeds: every group's rewards are equal)."""
    from agentgym_core.config import build_component, load_config
    from agentgym_core.plugins import get_plugin_manager
    from agentgym_hf.testing import tiny_model_dir
    from rl_helpers import tiny_config

    manager = get_plugin_manager(fresh=True)
    cfg = load_config(None, tiny_config(tiny_model_dir(tmp_path), tmp_path / "runs", **{"trainer.steps": "3", **extra}),
                      manager=manager)
    trainer = build_component(manager, "trainers", cfg.trainer, cfg, manager)
    trainer.fit()
    run = tmp_path / "runs" / cfg.run.name
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()], run


def test_no_signal_warns_with_the_fixes(tmp_path, capfd):
    rows, _ = _run(tmp_path)
    err = capfd.readouterr().err
    assert err.count("every episode got the same reward") == 1, err  # said once, not every step
    assert "trained nothing (loss 0, grad norm 0)" in err and "trainer.dynamic_sampling=true" in err
    assert 'warm_start="expert"' in err and "trainer.demos_expert" in err and "{name: format" in err
    assert all(r["grad_norm"] == 0 for r in rows)
    assert "groups_dropped" not in rows[0]  # dynamic sampling off: the metrics rows are as they were


def test_dynamic_sampling_plays_more_groups_and_says_when_capped(tmp_path, capfd):
    rows, run = _run(tmp_path, **{"trainer.dynamic_sampling": "true", "trainer.dynamic_sampling_rounds": "1"})
    err = capfd.readouterr().err
    for r in rows:  # 2 uniform groups, one extra round of 2 more, still nothing informative
        assert (r["groups_played"], r["groups_dropped"], r["groups_trained"]) == (4, 4, 0)
        assert r["sampling_rounds"] == 1 and r["sampling_capped"] == 1 and r["episodes"] == 8
    assert "dynamic sampling hit its cap (trainer.dynamic_sampling_rounds=1 extra rounds) in each of the last 3" in err
    step = [json.loads(line) for line in (run / "trajectories" / "step_000001.jsonl").read_text().splitlines()]
    assert sorted({t["group_id"] for t in step}) == [0, 1, 2, 3]  # the extra round's groups are numbered on


@pytest.fixture
def parity(plugin_manager, register_plugin):
    """The ``parity`` reward (:class:`ParityReward`) registered in the test's plugin manager."""
    from agentgym_core import hookimpl

    plugin = types.ModuleType("parity_reward")

    @hookimpl
    def register_rewards(registry):
        registry.add("parity", f"{__name__}:ParityReward")

    plugin.register_rewards = register_rewards
    register_plugin(plugin, "parity")
    plugin_manager.load_entrypoints()


@pytest.mark.timeout(900)
def test_dynamic_sampling_keeps_informative_groups(tmp_path, plugin_manager, parity):
    """With a reward that varies within some groups only, each step trains on tasks_per_step informative groups."""
    from agentgym_core.config import build_component, load_config
    from agentgym_hf.testing import tiny_model_dir
    from rl_helpers import tiny_config

    cfg = load_config(None, tiny_config(tiny_model_dir(tmp_path), tmp_path / "runs", **{
        "trainer.steps": "2", "trainer.dynamic_sampling": "true", "trainer.dynamic_sampling_rounds": "6",
        "rollout.group_size": "4",
        "rewards": "[{name: parity, weight: 1.0}]"}), manager=plugin_manager)
    trainer = build_component(plugin_manager, "trainers", cfg.trainer, cfg, plugin_manager)
    trainer.fit()
    rows = [json.loads(line) for line in (tmp_path / "runs" / "tiny" / "metrics.jsonl").read_text().splitlines()]
    for r in rows:
        assert r["groups_trained"] == 2 and r["sampling_capped"] == 0
        assert r["groups_played"] == r["groups_trained"] + r["groups_dropped"]


@pytest.mark.timeout(900)
def test_the_pipelined_worker_plays_the_rounds_the_synchronous_trainer_plays(tmp_path, plugin_manager, parity):
    """trainer.max_staleness=1 (pipelined) with dynamic sampling: the rollout worker plays a step's extra rounds by
    the batch's weights version. Step 1 is sampled by version 0 in both modes, so its episodes (every round: the
    same task ids, group numbers and seeds) are the synchronous run's token for token; every step trains on
    tasks_per_step informative groups."""
    from agentgym_core.config import build_component, load_config
    from agentgym_hf.testing import tiny_model_dir
    from rl_helpers import tiny_config

    model = tiny_model_dir(tmp_path)

    def train(name: str, **extra: str) -> tuple[list[dict], list[tuple]]:
        cfg = load_config(None, tiny_config(model, tmp_path / "runs", name=name, **{
            "trainer.steps": "3", "trainer.dynamic_sampling": "true", "trainer.dynamic_sampling_rounds": "6",
            "rollout.group_size": "4", "rollout.concurrency": "4", "rollout.lockstep": "true",
            "rewards": "[{name: parity, weight: 1.0}]", **extra}), manager=plugin_manager)
        build_component(plugin_manager, "trainers", cfg.trainer, cfg, plugin_manager).fit()
        run = tmp_path / "runs" / name
        rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
        first = [json.loads(line) for line in (run / "trajectories" / "step_000001.jsonl").read_text().splitlines()]
        return rows, [(t["task_id"], t["group_id"], t["token_ids"]) for t in first]

    sync_rows, sync_first = train("sync")
    rows, first = train("pipelined", **{"trainer.max_staleness": "1"})
    assert first == sync_first
    assert rows[0]["sampling_rounds"] == sync_rows[0]["sampling_rounds"] >= 1  # the parity reward drops odd tasks
    assert rows[0]["groups_played"] == sync_rows[0]["groups_played"]
    for r in rows:
        assert r["groups_trained"] == 2 and r["sampling_capped"] == 0
        assert r["groups_played"] == r["groups_trained"] + r["groups_dropped"]
        assert r["staleness_max"] <= 1


class ParityReward:
    """Odd task ids: 0 for every episode (no signal). Even ones: the parity of the sampled tokens' sum."""

    def __call__(self, trajectory):
        value = float(sum(trajectory.token_ids) % 2) if trajectory.task_id % 2 == 0 else 0.0
        return [0.0] * (len(trajectory.turns) - 1) + [value] if trajectory.turns else []


@pytest.fixture(autouse=True)
def _one_thread():
    import torch

    torch.set_num_threads(1)
