"""Advantage estimators against hand-computed values, on a multi-turn episode ending in an observation."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from agentgym_core.rollout.trajectory import Trajectory, Turn  # noqa: E402
from agentgym_trainer_rl.algorithms import ALGORITHMS, EstimatorOptions, discounted_returns, gae, grpo, reinforce_pp, rloo  # noqa: E402
from agentgym_trainer_rl.batch import build_batch  # noqa: E402

# positions: 0-1 prompt | 2-3 turn 0 | 4-5 observation | 6 turn 1 | 7-8 final observation
MASK = [0, 0, 1, 1, 0, 0, 1, 0, 0]
GEN = [2, 3, 6]


def episode(final_reward: float, group: int = 0, failed: bool = False) -> Trajectory:
    return Trajectory(
        episode_id="e", env_name="toy", task_id=0, group_id=group,
        token_ids=[1, 2, 3, 4, 5, 6, 7, 8, 9], loss_mask=list(MASK), logprobs=[0.0] * 9, prompt_len=2,
        turns=[Turn(2, 4, "a", "a", "obs"), Turn(6, 7, "b", "b", "end", done=True)],
        rewards=[0.0, final_reward], failed=failed,
    )


def test_reward_sits_on_last_generated_token_of_its_turn():
    batch = build_batch([episode(1.0)])
    assert batch.token_rewards[0].tolist() == [0, 0, 0, 0, 0, 0, 1.0, 0, 0]
    assert batch.loss_mask[0].tolist() == MASK


def test_failed_episode_is_not_trained_on():
    batch = build_batch([episode(1.0, failed=True)])
    assert batch.loss_mask.sum() == 0 and batch.token_rewards.sum() == 0


def test_grpo_group_normalised():
    batch = build_batch([episode(1.0), episode(0.0), episode(0.0), episode(1.0, group=1)])
    adv, _ = grpo(batch, EstimatorOptions())
    std = (1 / 3) ** 0.5  # unbiased std of [1, 0, 0]
    for i, expected in enumerate([(2 / 3) / std, -(1 / 3) / std, -(1 / 3) / std]):
        assert adv[i, GEN].tolist() == pytest.approx([expected] * 3, rel=1e-4)
        assert adv[i, [0, 1, 4, 5, 7, 8]].abs().sum() == 0
    assert adv[3, GEN].tolist() == pytest.approx([1.0] * 3)  # a group of one: no baseline
    adv_nostd, _ = grpo(batch, EstimatorOptions(norm_std=False))
    assert adv_nostd[0, 2].item() == pytest.approx(2 / 3)


def test_rloo_leave_one_out():
    batch = build_batch([episode(1.0), episode(0.0), episode(0.0)])
    adv, _ = rloo(batch, EstimatorOptions())
    assert adv[:, 2].tolist() == pytest.approx([1.0, -0.5, -0.5])
    assert adv[0, GEN].tolist() == pytest.approx([1.0] * 3)


def test_reinforce_pp_discounts_over_generated_tokens_only():
    batch = build_batch([episode(1.0)])
    adv, returns = reinforce_pp(batch, EstimatorOptions(gamma=0.5, whiten=False))
    # the observation tokens between the turns do not count as discount steps
    assert returns[0].tolist() == pytest.approx([0, 0, 0.25, 0.5, 0, 0, 1.0, 0, 0])
    assert adv[0, GEN].abs().min() > 0
    whitened, _ = reinforce_pp(build_batch([episode(1.0), episode(0.0)]), EstimatorOptions(gamma=0.5))
    m = build_batch([episode(1.0), episode(0.0)]).loss_mask
    assert float((whitened * m).sum()) == pytest.approx(0.0, abs=1e-5)
    assert whitened[0, 6] > 0 > whitened[1, GEN].max()


def test_gae_hand_computed():
    batch = build_batch([episode(1.0)])
    values = torch.zeros_like(batch.loss_mask)
    values[0, 2], values[0, 3], values[0, 6] = 0.5, 0.2, 0.4
    values[0, 4] = 99.0  # a value on an observation token must be ignored
    batch.values = values
    adv, returns = gae(batch, EstimatorOptions(gamma=1.0, lam=1.0, whiten=False))
    assert adv[0, GEN].tolist() == pytest.approx([0.5, 0.8, 0.6])
    adv, returns = gae(batch, EstimatorOptions(gamma=0.9, lam=0.5, whiten=False))
    a6 = 1 - 0.4
    a3 = (0.9 * 0.4 - 0.2) + 0.45 * a6
    a2 = (0.9 * 0.2 - 0.5) + 0.45 * a3
    assert adv[0, GEN].tolist() == pytest.approx([a2, a3, a6])
    assert returns[0, GEN].tolist() == pytest.approx([a2 + 0.5, a3 + 0.2, a6 + 0.4])
    assert adv[0, [0, 1, 4, 5, 7, 8]].abs().sum() == 0


@pytest.mark.parametrize("name", ["ppo", "grpo", "rloo", "reinforce_pp"])
def test_every_algorithm_reaches_generated_tokens_when_episode_ends_on_observation(name):
    batch = build_batch([episode(1.0), episode(0.0)])
    batch.values = torch.zeros_like(batch.loss_mask)
    adv, _ = ALGORITHMS[name].estimate(batch, EstimatorOptions())
    assert (adv[:, GEN] != 0).all(), adv
    assert adv[:, [0, 1, 4, 5, 7, 8]].abs().sum() == 0


def test_discounted_returns_keeps_reward_across_masked_gap():
    rewards = torch.tensor([[0.0, 0.0, 0.0, 2.0, 0.0]])
    mask = torch.tensor([[1.0, 0.0, 0.0, 1.0, 0.0]])
    assert discounted_returns(rewards, mask, 1.0)[0].tolist() == [2.0, 0, 0, 2.0, 0]
