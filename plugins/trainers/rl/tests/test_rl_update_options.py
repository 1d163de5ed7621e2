"""The new update options through the real Updater on a tiny random model: failed rows out of the
update, lone groups counted, dual clip, GSPO, the aggregations across micro-batches, adaptive KL."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from agentgym_core.rollout.trajectory import Trajectory, Turn  # noqa: E402
from agentgym_trainer_rl.algorithms import ALGORITHMS, EstimatorOptions  # noqa: E402
from agentgym_trainer_rl.batch import build_batch  # noqa: E402
from agentgym_trainer_rl.losses import kl_estimate  # noqa: E402
from agentgym_trainer_rl.policy import PolicyModule, frozen_copy  # noqa: E402
from agentgym_trainer_rl.update import Updater, UpdateSettings, adaptive_kl_coef  # noqa: E402


def tiny_lm(seed: int = 0):
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(vocab_size=8, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                   num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32)
    return transformers.LlamaForCausalLM(cfg)


def episode(rewards, group=0, failed=False, seed=0):
    """Two-token prompt, then per turn 2 generated tokens and a 2-token observation (ends on one)."""
    g = torch.Generator().manual_seed(seed)
    ids, mask, turns = [1, 2], [0, 0], []
    for _ in rewards:
        turns.append(Turn(len(ids), len(ids) + 2, "a", "a", "obs"))
        ids += torch.randint(3, 6, (2,), generator=g).tolist() + [6, 7]
        mask += [1, 1, 0, 0]
    return Trajectory(episode_id="e", env_name="toy", task_id=group, group_id=group, token_ids=ids, loss_mask=mask,
                      logprobs=[0.0] * len(ids), prompt_len=2, turns=turns, rewards=list(rewards), failed=failed)


TRAJS = [episode([0, 1], seed=1), episode([0, 0], seed=2), episode([-0.3, 1], seed=3), episode([1], seed=4),
         episode([0, 0, 1], group=1, seed=5), episode([0.5], group=1, seed=6)]


def updater(algorithm="grpo", reference=False, **opts):
    torch.set_num_threads(1)
    policy = PolicyModule(tiny_lm(5), value_head=ALGORITHMS[algorithm].needs_critic)
    opt = torch.optim.SGD(policy.parameters(), lr=0.5)
    ref = PolicyModule(frozen_copy(tiny_lm(7))) if reference else None
    opts.setdefault("max_grad_norm", 1e9)
    return Updater(policy, opt, ALGORITHMS[algorithm], UpdateSettings(**opts), EstimatorOptions(gamma=0.9), reference=ref)


def weights(up: Updater) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in up.policy.parameters()])


@pytest.mark.parametrize("algorithm", ["grpo", "rloo", "dr_grpo", "reinforce_pp_baseline"])
def test_failed_episode_changes_nothing_in_the_update(algorithm):
    """The same step with a failed episode added to a group gives the same weights (token-mean)."""
    torch.manual_seed(0)
    plain = updater(algorithm, loss_agg="token")
    plain.step(build_batch(TRAJS))
    torch.manual_seed(0)
    with_failed = updater(algorithm, loss_agg="token")
    metrics = with_failed.step(build_batch([episode([1, 1], failed=True, seed=9)] + TRAJS))
    assert torch.allclose(weights(plain), weights(with_failed), atol=1e-6)
    assert metrics["lone_groups"] == 0


def test_lone_group_is_counted_and_summed_over_processes():
    up = updater("grpo")
    batch = build_batch([episode([1], failed=True, seed=9), episode([0, 1], seed=1)] + TRAJS[4:])
    metrics = up.step(batch)
    assert metrics["lone_groups"] == 1
    assert batch.advantages[1].abs().sum() == 0
    # the trainer averages each metric over processes; lone_groups is a count, so it is summed back
    assert Updater.extra_metrics({"lone_groups": 0.5, "clipfrac": 0.1}, world=2) == {"lone_groups": 1.0}


@pytest.mark.parametrize("agg", ["seq-mean-token-sum", "seq-mean-token-sum-norm", "seq-mean-token-mean"])
def test_micro_batches_give_the_one_batch_update(agg):
    """Gradient accumulation over micro-batches equals one batch for every aggregation (and with the
    GSPO loss, whose ratio is per row)."""
    for loss in ("ppo", "gspo"):
        results = []
        for accum in (1, 3):
            torch.manual_seed(0)
            up = updater("grpo", grad_accum=accum, loss_agg=agg, loss_norm_tokens=4.0, policy_loss=loss,
                         share_prefix=False)
            up.step(build_batch(TRAJS))
            results.append(weights(up))
        assert torch.allclose(results[0], results[1], atol=1e-6), (agg, loss)


def test_default_aggregation_follows_the_algorithm_and_the_loss():
    assert updater("grpo").loss_agg == "token-mean"
    assert updater("dr_grpo").loss_agg == "seq-mean-token-sum"
    assert updater("grpo", policy_loss="gspo").loss_agg == "seq-mean-token-mean"
    assert updater("dr_grpo", loss_agg="token").loss_agg == "token-mean"


def test_dual_clip_reports_where_it_held_and_changes_the_update():
    """Several epochs at a high learning rate push ratios past clip_ratio_c on negative advantages."""
    def run(clip_c):
        torch.manual_seed(0)
        up = updater("grpo", ppo_epochs=4, clip_ratio_c=clip_c, clip_ratio=0.2)
        up.optimizer.param_groups[0]["lr"] = 40.0
        return up.step(build_batch(TRAJS)), weights(up)

    (with_c, w_c), (without, w) = run(1.01), run(None)
    assert "clipfrac_lower" in with_c and "clipfrac_lower" not in without
    assert 0 < with_c["clipfrac_lower"] <= 1
    assert not torch.equal(w_c, w)


@pytest.mark.parametrize("mode", ["loss", "reward"])
def test_adaptive_kl_moves_the_coefficient_by_the_measured_kl(mode):
    up = updater("grpo", reference=True, kl_coef=0.2, kl_ctrl="adaptive", kl_target=0.01, kl_horizon=50,
                 kl_mode=mode, kl_estimator="k1")
    batch = build_batch(TRAJS)
    metrics = up.step(batch)
    assert metrics["kl_coef"] == 0.2  # the coefficient this step used
    assert up.kl_coef == pytest.approx(adaptive_kl_coef(0.2, metrics["kl"], 0.01, len(TRAJS), 50))
    assert up.kl_coef != 0.2
    state = up.state_dict()
    fresh = updater("grpo", reference=True, kl_coef=0.2, kl_ctrl="adaptive")
    fresh.load_state_dict(state)
    assert fresh.kl_coef == up.kl_coef
    fixed = updater("grpo", reference=True, kl_coef=0.3)
    assert fixed.state_dict() == {}
    fixed.load_state_dict(state)  # a fixed coefficient comes from the config, even on resume
    assert fixed.kl_coef == 0.3 and "kl_coef" not in fixed.step(build_batch(TRAJS))


def test_kl_in_reward_uses_the_chosen_estimator_and_bound():
    up = updater("grpo", reference=True, kl_coef=0.5, kl_mode="reward", kl_estimator="k2", kl_clamp=0.01)
    batch = build_batch(TRAJS)
    rewards = batch.token_rewards.clone()
    up.score(batch)
    up.advantages(batch)
    kl = kl_estimate(batch.old_logprobs, batch.ref_logprobs, "k2", 0.01)
    assert torch.allclose(batch.token_rewards, rewards - 0.5 * kl * batch.loss_mask)
    assert kl.max() <= 0.01
