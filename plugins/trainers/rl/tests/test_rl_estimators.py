"""Group estimators (GRPO, Dr. GRPO, RLOO, REINFORCE++-baseline) against values computed by hand from
the papers' formulas, on multi-turn episodes with observation spans that end on an observation:
failed episodes, groups of one, all-equal groups, and turn-level credit."""
from __future__ import annotations

from statistics import mean, pstdev, stdev

import pytest

torch = pytest.importorskip("torch")

from agentgym_core.rollout.trajectory import Trajectory, Turn  # noqa: E402
from agentgym_trainer_rl.algorithms import (  # noqa: E402
    ALGORITHMS, EstimatorOptions, dr_grpo, grpo, lone_groups, reinforce_pp_baseline, rloo, turn_returns,
)
from agentgym_trainer_rl.batch import build_batch  # noqa: E402

EPS = 1e-6


def episode(rewards: list[float], group: int = 0, failed: bool = False) -> Trajectory:
    """Prompt (2 tokens), then per turn 2 generated tokens and a 2-token observation: it ends on one."""
    ids, mask, turns = [1, 1], [0, 0], []
    for k in range(len(rewards)):
        turns.append(Turn(len(ids), len(ids) + 2, "a", "a", "obs", done=k == len(rewards) - 1))
        ids += [3, 4, 6, 7]
        mask += [1, 1, 0, 0]
    return Trajectory(episode_id="e", env_name="toy", task_id=group, group_id=group, token_ids=ids, loss_mask=mask,
                      logprobs=[0.0] * len(ids), prompt_len=2, turns=turns, rewards=list(rewards), failed=failed)


def tokens(k: int) -> list[int]:
    """The generated positions of turn k."""
    return [2 + 4 * k, 3 + 4 * k]


def at(adv: torch.Tensor, row: int, k: int) -> float:
    a, b = adv[row, tokens(k)].tolist()
    assert a == b, "both tokens of a turn get the turn's advantage"
    return a


def unbiased_z(values: list[float]) -> list[float]:
    m, s = mean(values), stdev(values)
    return [(v - m) / (s + EPS) for v in values]


# -- the failed-episode bug ------------------------------------------------------------------------
@pytest.mark.parametrize("estimator", [grpo, rloo, dr_grpo])
def test_failed_episode_is_out_of_the_baseline(estimator):
    """[failed, 1, 1, 1]: the successes are all equal, so they get 0 (before the fix the failed row
    counted with score 0 in the group's statistics: 0.5 under GRPO, 0.33 under RLOO)."""
    batch = build_batch([episode([0, 0], failed=True)] + [episode([0, 1]) for _ in range(3)])
    adv, _ = estimator(batch, EstimatorOptions())
    assert adv.abs().max() == 0
    assert batch.loss_mask[0].sum() == 0 and bool(batch.failed[0])


def test_failed_episode_does_not_change_the_others_advantages():
    """A group with a failed row gives its usable rows what the group without that row gives them."""
    rewards = [[0, 1], [0, 0], [-0.3, 1], [1]]
    with_failed = build_batch([episode([1, 1], failed=True)] + [episode(r) for r in rewards])
    without = build_batch([episode(r) for r in rewards])
    for name in ("grpo", "dr_grpo", "rloo", "reinforce_pp_baseline"):
        for credit in ("episode", "turn"):
            a, _ = ALGORITHMS[name].estimate(with_failed, EstimatorOptions(credit=credit, gamma=0.9))
            b, _ = ALGORITHMS[name].estimate(without, EstimatorOptions(credit=credit, gamma=0.9))
            assert a[0].abs().sum() == 0
            assert torch.allclose(a[1:, : b.shape[1]], b, atol=1e-6), (name, credit)


def test_group_left_with_one_episode_gets_zero_and_is_counted():
    # group 0: 3 failed + 1 usable (lone); group 1: built with one episode (no baseline: keeps R);
    # group 2: every episode failed.
    batch = build_batch([episode([0, 1], failed=True)] * 3 + [episode([0, 1])] + [episode([0.5], group=1)]
                        + [episode([1], group=2, failed=True)] * 2)
    assert lone_groups(batch) == 1
    for name in ("grpo", "dr_grpo", "rloo", "reinforce_pp_baseline"):
        adv, _ = ALGORITHMS[name].estimate(batch, EstimatorOptions(whiten=False))
        assert adv[3].abs().sum() == 0, name
        assert at(adv, 4, 0) == pytest.approx(0.5), name  # a group of one: its own return (as verl)
        assert adv[5:].abs().sum() == 0


# -- episode credit: each formula by hand ---------------------------------------------------------------
REWARDS = [[0, 1], [-0.3, 0], [0, -0.3, 1], [0, 0, 0]]  # scores 1, -0.3, 0.7, 0


def scores_of(rewards: list[list[float]]) -> list[float]:
    return [sum(r) for r in rewards]


def check_episode(adv: torch.Tensor, expected: list[float], rewards: list[list[float]]) -> None:
    mask = build_batch([episode(r) for r in rewards]).loss_mask
    for i, (value, r) in enumerate(zip(expected, rewards)):
        for k in range(len(r)):
            assert at(adv, i, k) == pytest.approx(value, abs=1e-5), (i, k)
    assert (adv[: mask.shape[0], : mask.shape[1]] * (1 - mask)).abs().sum() == 0  # prompt / observations: 0


def test_grpo_by_hand():
    """Shao et al. 2024, eq. 3 (outcome supervision): (R_i - mean R) / std R, std with N - 1 (as verl)."""
    adv, _ = grpo(build_batch([episode(r) for r in REWARDS]), EstimatorOptions())
    check_episode(adv, unbiased_z(scores_of(REWARDS)), REWARDS)


def test_dr_grpo_by_hand_ignores_norm_std():
    """Liu et al. 2025, eq. 3: R_i - mean R, never divided by the std (norm_adv has no say)."""
    s = scores_of(REWARDS)
    adv, _ = dr_grpo(build_batch([episode(r) for r in REWARDS]), EstimatorOptions(norm_std=True))
    check_episode(adv, [v - mean(s) for v in s], REWARDS)


def test_rloo_by_hand():
    """Ahmadian et al. 2024, eq. 6: R_i - (1 / (k - 1)) sum_{j != i} R_j."""
    s = scores_of(REWARDS)
    adv, _ = rloo(build_batch([episode(r) for r in REWARDS]), EstimatorOptions())
    check_episode(adv, [v - (sum(s) - v) / (len(s) - 1) for v in s], REWARDS)


def test_reinforce_pp_baseline_by_hand():
    """Hu 2025, eq. 9: R_i - mean of the group, then whitened over all the batch's tokens (ours: std over
    N, divided by std + 1e-6; verl: N - 1 and rsqrt(var + 1e-8))."""
    rewards = REWARDS + [[1], [0, 0]]  # a second group
    batch = build_batch([episode(r, group=0 if i < 4 else 1) for i, r in enumerate(rewards)])
    s = scores_of(rewards)
    centred = [v - mean(s[:4]) for v in s[:4]] + [v - mean(s[4:]) for v in s[4:]]
    per_token = [c for c, r in zip(centred, rewards) for _ in range(2 * len(r))]  # 2 tokens a turn
    m, sd = mean(per_token), pstdev(per_token)
    adv, _ = reinforce_pp_baseline(batch, EstimatorOptions())
    check_episode(adv, [(c - m) / (sd + EPS) for c in centred], rewards)
    raw, _ = reinforce_pp_baseline(batch, EstimatorOptions(whiten=False))
    check_episode(raw, centred, rewards)


@pytest.mark.parametrize("name", ["grpo", "dr_grpo", "rloo", "reinforce_pp_baseline"])
@pytest.mark.parametrize("credit", ["episode", "turn"])
def test_all_equal_group_gets_zero(name, credit):
    batch = build_batch([episode([0, 1]) for _ in range(4)])
    adv, _ = ALGORITHMS[name].estimate(batch, EstimatorOptions(credit=credit, whiten=False))
    assert adv.abs().max() == 0


# A format penalty of -0.3 is not a float32 number: eight equal -0.3 returns have a float32 mean an ulp
# off, and (x - mean) / (std + eps) gave -0.029 on every token (the quickstart's first steps).
PENALISED = [[-0.3], [0.0, -0.3], [-0.3, 0.0], [0.7, -1.0], [-0.1, -0.1, -0.1], [-0.3], [0.0, 0.0, -0.3], [-0.3]]


@pytest.mark.parametrize("name", ["grpo", "dr_grpo", "rloo", "reinforce_pp_baseline"])
@pytest.mark.parametrize("credit", ["episode", "turn"])
def test_returns_equal_but_for_rounding_get_exactly_zero(name, credit):
    """Eight episodes whose returns are -0.3, summed from other rewards on other turns: no signal, so
    every advantage is 0 exactly (what dynamic sampling and the no-signal warning say of the group)."""
    rewards = PENALISED if credit == "episode" else [[-0.3]] * 8
    if credit == "episode":
        assert len({sum(r) for r in rewards}) > 1, "the sums should differ in their last bits"
    adv, _ = ALGORITHMS[name].estimate(build_batch([episode(r) for r in rewards]),
                                       EstimatorOptions(credit=credit, whiten=False))
    assert adv.abs().max() == 0


def test_grpo_by_hand_with_rewards_that_are_not_float32_numbers():
    """Seven -0.3 and one 0.7 (float64 by hand): the float64 baseline is within float32's rounding of it."""
    rewards = [[-0.3]] * 7 + [[1.0, -0.3]]
    adv, _ = grpo(build_batch([episode(r) for r in rewards]), EstimatorOptions())
    expected = unbiased_z([-0.3] * 7 + [0.7])  # -0.3536 and 2.4749
    for row, want in enumerate(expected):
        assert at(adv, row, 0) == pytest.approx(want, abs=1e-6)


# -- turn credit --------------------------------------------------------------------------------------
def test_turn_returns_by_hand():
    """G_k = sum_{j >= k} gamma^(j - k) r_j over the turns (observation tokens are no discount steps)."""
    batch = build_batch([episode([0, -0.3, 1]), episode([0.5]), episode([1, 1], failed=True)])
    returns, present = turn_returns(batch, 0.5)
    assert returns[0].tolist() == pytest.approx([-0.15 + 0.25, -0.3 + 0.5, 1.0])
    assert returns[1].tolist() == pytest.approx([0.5, 0, 0])
    assert present.tolist() == [[True, True, True], [True, False, False], [False, False, False]]


TURN_REWARDS = [[0, 1], [0, -0.3], [0, 0, -0.3], [1]]
G = 0.5


def turn_values(rewards: list[float]) -> list[float]:
    return [sum(G ** (j - k) * rewards[j] for j in range(k, len(rewards))) for k in range(len(rewards))]


def test_turn_level_grpo_by_hand():
    """Turn k's return against the group's returns at turn k (the episodes that reached it); a turn index
    only one episode reached has no baseline (0)."""
    batch = build_batch([episode(r) for r in TURN_REWARDS])
    adv, _ = grpo(batch, EstimatorOptions(credit="turn", gamma=G))
    values = [turn_values(r) for r in TURN_REWARDS]  # [[0.5, 1], [-0.15, -0.3], [-0.075, -0.15, -0.3], [1]]
    z0 = unbiased_z([v[0] for v in values])
    z1 = unbiased_z([v[1] for v in values[:3]])
    for i in range(4):
        assert at(adv, i, 0) == pytest.approx(z0[i], abs=1e-5)
    for i in range(3):
        assert at(adv, i, 1) == pytest.approx(z1[i], abs=1e-5)
    assert at(adv, 2, 2) == 0  # only episode 2 reached turn 2
    assert (adv * (1 - batch.loss_mask)).abs().sum() == 0


def test_turn_level_rloo_pushes_a_good_first_move_less_than_the_bad_last_move():
    """Episode 1 fails on its last move (format penalty): its first move, as good as the others', is
    pushed down by gamma times what the last move is (RLOO: R - mean of the others, per turn index)."""
    rewards = [[0, 1], [0, -0.3], [0, 0]]
    adv, _ = rloo(build_batch([episode(r) for r in rewards]), EstimatorOptions(credit="turn", gamma=G))
    first = -0.15 - (0.5 + 0) / 2
    last = -0.3 - (1 + 0) / 2
    assert at(adv, 1, 0) == pytest.approx(first) and at(adv, 1, 1) == pytest.approx(last)
    assert abs(at(adv, 1, 0)) < abs(at(adv, 1, 1))
    episode_level, _ = rloo(build_batch([episode(r) for r in rewards]), EstimatorOptions())
    assert at(episode_level, 1, 0) == at(episode_level, 1, 1) == pytest.approx(-0.3 - 0.5)


def test_turn_level_reinforce_pp_baseline_and_group_of_one():
    batch = build_batch([episode(r) for r in TURN_REWARDS] + [episode([0.2, 0.4], group=1)])
    adv, _ = reinforce_pp_baseline(batch, EstimatorOptions(credit="turn", gamma=G, whiten=False))
    values = [turn_values(r) for r in TURN_REWARDS]
    m0, m1 = mean(v[0] for v in values), mean(v[1] for v in values[:3])
    assert at(adv, 0, 0) == pytest.approx(0.5 - m0) and at(adv, 1, 1) == pytest.approx(-0.3 - m1)
    assert at(adv, 2, 2) == 0
    # the group of one keeps its own turn returns: 0.2 + 0.5 * 0.4, 0.4
    assert [at(adv, 4, 0), at(adv, 4, 1)] == pytest.approx([0.4, 0.4])
    whitened, _ = reinforce_pp_baseline(batch, EstimatorOptions(credit="turn", gamma=G))
    assert at(whitened, 2, 2) == 0  # no comparison: left out of the whitening, stays 0
    compared = batch.loss_mask.clone()
    compared[2, tokens(2)] = 0
    assert float((whitened * compared).sum()) == pytest.approx(0.0, abs=1e-5)


def test_turn_credit_with_gamma_one_and_outcome_reward_at_turn_zero_is_grpo():
    """Every episode reaches turn 0, so with gamma 1 and rewards only at the end turn 0's advantage is GRPO's."""
    rewards = [[0, 1], [0, 0], [1], [0, 0, 0]]
    batch = build_batch([episode(r) for r in rewards])
    turn, _ = grpo(batch, EstimatorOptions(credit="turn", gamma=1.0))
    whole, _ = grpo(batch, EstimatorOptions())
    assert torch.allclose(turn[:, tokens(0)], whole[:, tokens(0)], atol=1e-6)


def test_turn_with_no_generated_token_gives_its_reward_to_the_turn_before():
    traj = episode([0, 1])
    traj.turns[1] = Turn(traj.turns[1].start, traj.turns[1].start, "", None, "end", done=True)
    traj.loss_mask[6:8] = [0, 0]
    batch = build_batch([traj])
    returns, present = turn_returns(batch, 0.5)
    assert present[0].tolist() == [True] and returns[0].tolist() == [1.0]
