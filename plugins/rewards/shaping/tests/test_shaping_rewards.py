"""Each shaping reward against hand-computed values on constructed trajectories."""
import pytest

from agentgym_core.config import build_component, load_config
from agentgym_core.errors import ConfigError
from agentgym_core.rollout.trajectory import Trajectory, Turn
from agentgym_reward_shaping import plugin
from agentgym_reward_shaping.rewards import DecayReward, FormatReward, NormalizeReward, StepPenaltyReward


def turn(ok=True, invalid=False):
    return Turn(start=0, end=1, text="x", action="go" if ok else None,
                info={"invalid_action": True} if invalid else {},
                parse_error=None if ok else "no 'Action:' line")


def traj(*turns, score=0.0, success=False):
    return Trajectory(episode_id="e", env_name="t", task_id=0, group_id=0, token_ids=[], loss_mask=[],
                      logprobs=[], prompt_len=0, turns=list(turns), score=score, success=success)


# turns: ok, unparsable, ok, invalid, unparsable+invalid
MIXED = traj(turn(), turn(ok=False), turn(), turn(invalid=True), turn(ok=False, invalid=True), score=0.5)


@pytest.fixture
def manager(plugin_manager, register_plugin):
    register_plugin(plugin, name="shaping")
    return plugin_manager


def test_format_penalises_unparsable_and_invalid_turns():
    assert FormatReward(penalty=0.5)(MIXED) == [0.0, -0.5, 0.0, -0.5, -0.5]
    assert FormatReward()(traj(turn(), turn())) == [0.0, 0.0]
    assert FormatReward()(traj()) == []


def test_step_penalty_costs_every_turn():
    assert StepPenaltyReward(cost=0.25)(MIXED) == [-0.25] * 5
    assert StepPenaltyReward()(traj()) == []


def test_decay_later_mistakes_cost_more():
    r = DecayReward(base=0.1, growth=2.0, max_cost=0.5)
    # mistakes at turns 1, 3, 4: 0.1*2**1 = 0.2, 0.1*2**3 = 0.8 -> capped 0.5, capped 0.5
    assert r(MIXED) == pytest.approx([0.0, -0.2, 0.0, -0.5, -0.5])
    flat = DecayReward(base=0.3, growth=1.0, max_cost=1.0)
    assert flat(MIXED) == pytest.approx([0.0, -0.3, 0.0, -0.3, -0.3])
    assert r.cost(10**6) == 0.5  # no overflow
    early, late = r(traj(turn(ok=False), turn())), r(traj(turn(), turn(ok=False)))
    assert sum(late) < sum(early) < 0


def test_normalize_maps_score_range_onto_last_turn():
    unit = NormalizeReward(low=0, high=100, to="unit")
    signed = NormalizeReward(low=0, high=100, to="signed")
    assert unit(traj(turn(), turn(), score=25.0)) == [0.0, 0.25]
    assert signed(traj(turn(), turn(), score=25.0)) == [0.0, -0.5]
    assert unit(traj(turn(), score=150.0)) == [1.0]          # clipped
    assert signed(traj(turn(), score=-3.0)) == [-1.0]        # clipped
    assert NormalizeReward(low=-1, high=1, to="unit")(traj(turn(), score=0.0)) == [0.5]
    assert unit(traj(score=50.0)) == []


def test_rewards_built_from_a_weighted_config_list(manager):
    cfg = load_config(None, ["rewards=[{name: success, weight: 1.0}, {name: format, weight: 0.1, penalty: 2.0},"
                             " {name: normalize, high: 10, to: signed}]"], manager=manager)
    built = [build_component(manager, "rewards", item) for item in cfg.rewards]
    assert [item.weight for item in cfg.rewards] == [1.0, 0.1, 1.0]
    assert built[1](MIXED) == [0.0, -2.0, 0.0, -2.0, -2.0]
    assert built[2](traj(turn(), score=7.5)) == [0.5]


@pytest.mark.parametrize("item, message", [
    ("{name: normalize, low: 1, high: 1}", "high must be greater than"),
    ("{name: normalize, to: percent}", "'unit'"),
    ("{name: decay, growth: 0.5}", "growth must be a finite number and >= 1.0"),
    ("{name: step_penalty, cost: -1}", "cost must be a finite number and >= 0.0"),
    ("{name: format, penlty: 1}", "Did you mean 'penalty'"),
])
def test_config_errors_name_the_key(manager, item, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, [f"rewards=[{item}]"], manager=manager)
