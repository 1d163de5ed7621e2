"""Loss terms against values computed by hand: KL estimators (k1, k2, k3, abs; bounded), dual-clip PPO,
GSPO's sequence ratio, the four loss aggregations, and the adaptive KL controller."""
from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from agentgym_trainer_rl.config import effective_loss_agg  # noqa: E402
from agentgym_trainer_rl.losses import (  # noqa: E402
    aggregate, clipped_policy_loss, dual_clip, gspo_policy_loss, kl_estimate, normaliser,
)
from agentgym_trainer_rl.update import adaptive_kl_coef  # noqa: E402


# -- KL estimators (Schulman 2020, "Approximating KL divergence"; r = ref / pi, x ~ pi) --------------------
@pytest.mark.parametrize("log_r", [-2.0, -0.3, 0.0, 0.7, 2.5])
def test_kl_estimators_by_hand(log_r):
    lp, ref = torch.tensor([-1.0]), torch.tensor([-1.0 + log_r])
    r = math.exp(log_r)
    expected = {"k1": -log_r, "k2": 0.5 * log_r ** 2, "k3": (r - 1) - log_r, "abs": abs(log_r)}
    aliases = {"k1": "kl", "k2": "mse", "k3": "low_var_kl"}  # verl's names
    for kind, value in expected.items():
        assert kl_estimate(lp, ref, kind).item() == pytest.approx(value, rel=1e-5, abs=1e-6), kind
        if kind in aliases:
            assert kl_estimate(lp, ref, aliases[kind]).item() == pytest.approx(value, rel=1e-5, abs=1e-6)


def test_kl_estimators_are_unbiased_or_not_as_the_note_says():
    """Sampled from pi = N(0, 1), ref = N(0.3, 1): KL = 0.045; k1 and k3 unbiased, k2 close (small KL)."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(400_000, generator=g, dtype=torch.float64)
    lp, ref = -0.5 * x ** 2, -0.5 * (x - 0.3) ** 2
    true = 0.3 ** 2 / 2
    assert kl_estimate(lp, ref, "k1").mean().item() == pytest.approx(true, rel=0.05)
    assert kl_estimate(lp, ref, "k3").mean().item() == pytest.approx(true, rel=0.02)
    assert kl_estimate(lp, ref, "k2").mean().item() == pytest.approx(true, rel=0.05)
    assert kl_estimate(lp, ref, "k3").min() >= 0 and kl_estimate(lp, ref, "k1").min() < 0


def test_k3_is_bounded_only_when_asked():
    """At log(ref / pi) = 15, k3 = e^15 - 16 = 3.3e6 and its gradient is as large; kl_clamp 10 (verl's
    bound) caps the value and stops the gradient there."""
    lp = torch.tensor([-16.0], requires_grad=True)
    ref = torch.tensor([-1.0])
    free = kl_estimate(lp, ref, "k3")
    assert free.item() == pytest.approx(math.exp(15) - 16, rel=1e-5)
    free.backward()
    assert lp.grad.item() == pytest.approx(-(math.exp(15) - 1), rel=1e-5)
    lp.grad = None
    bounded = kl_estimate(lp, ref, "k3", clamp=10.0)
    bounded.backward()
    assert bounded.item() == 10.0 and lp.grad.item() == 0.0
    # the bound applies to every estimator, both ways
    assert kl_estimate(torch.tensor([0.0]), torch.tensor([-30.0]), "k1", clamp=10.0).item() == 10.0
    assert kl_estimate(torch.tensor([-30.0]), torch.tensor([0.0]), "k1", clamp=10.0).item() == -10.0
    assert kl_estimate(torch.tensor([-1.0]), torch.tensor([-1.5]), "k3", clamp=10.0).item() == pytest.approx(
        math.exp(-0.5) - 1 + 0.5, rel=1e-5)


# -- dual-clip PPO (Ye et al. 2020, eq. 5) ------------------------------------------------------------------
def surrogate(ratio: float, adv: float, clip_c: float | None = None, eps: float = 0.2):
    lp = torch.tensor([math.log(ratio)], requires_grad=True)
    pg, _ = clipped_policy_loss(lp, torch.zeros(1), torch.tensor([adv]), eps, eps)
    lower = torch.zeros(1)
    if clip_c is not None:
        pg, lower = dual_clip(pg, torch.tensor([adv]), clip_c)
    pg.backward()
    return pg.item(), lp.grad.item(), lower.item()


@pytest.mark.parametrize("ratio, adv", [(5.0, -1.0), (2.0, -1.0), (0.5, -1.0), (5.0, 1.0), (1.1, 2.0)])
def test_dual_clip_by_hand(ratio, adv):
    """Objective: A < 0: max(min(r A, clip(r) A), c A); A >= 0: min(r A, clip(r) A); the loss is its negative."""
    c, eps = 3.0, 0.2
    ppo = min(ratio * adv, min(max(ratio, 1 - eps), 1 + eps) * adv)
    expected = max(ppo, c * adv) if adv < 0 else ppo
    loss, grad, lower = surrogate(ratio, adv, clip_c=c)
    assert loss == pytest.approx(-expected, rel=1e-6)
    assert lower == float(adv < 0 and ppo < c * adv)
    plain_loss, plain_grad, _ = surrogate(ratio, adv)
    assert plain_loss == pytest.approx(-ppo, rel=1e-6)
    if lower:  # the second clip holds the loss at -c A: no gradient however large the ratio
        assert grad == 0 and plain_grad == pytest.approx(-adv * ratio, rel=1e-6)
    else:
        assert grad == pytest.approx(plain_grad, rel=1e-6)


# -- GSPO (Zheng et al. 2025) -------------------------------------------------------------------------------
def test_gspo_sequence_ratio_clip_and_gradient_by_hand():
    """s_i = exp(mean_t log(pi / pi_old)) over the episode's generated tokens; the clip acts on s_i; with
    seq-mean-token-mean the gradient on token t is -A_i s_i / |y_i| (eq. 7), 0 where s_i is clipped."""
    mask = torch.tensor([[0, 1, 1, 0, 1], [0, 1, 1, 1, 0]], dtype=torch.float32)
    old = torch.zeros(2, 5)
    deltas = torch.tensor([[9.0, 0.1, -0.04, 7.0, 0.03], [0.0, 0.5, 0.4, 0.3, 0.0]])  # masked ones ignored
    lp = deltas.clone().requires_grad_(True)
    adv = torch.tensor([[1.0] * 5, [-2.0] * 5])
    pg, clipped = gspo_policy_loss(lp, old, adv, mask, 0.2, 0.2)
    s0, s1 = math.exp((0.1 - 0.04 + 0.03) / 3), math.exp((0.5 + 0.4 + 0.3) / 3)  # 1.030, 1.492
    assert pg[0, 1].item() == pytest.approx(-1.0 * s0, rel=1e-5)  # inside the clip range
    assert pg[1, 1].item() == pytest.approx(2.0 * s1, rel=1e-5)  # A < 0, s above 1.2: max keeps the larger
    assert clipped[0, 1] == 0 and clipped[1, 1] == 0
    loss = aggregate(pg, mask, "seq-mean-token-mean", normaliser(mask, "seq-mean-token-mean"))
    loss.backward()
    assert lp.grad[0].tolist() == pytest.approx([0, -s0 / 3 / 2, -s0 / 3 / 2, 0, -s0 / 3 / 2], rel=1e-5)
    g1 = 2 * s1 / 3 / 2
    assert lp.grad[1].tolist() == pytest.approx([0, g1, g1, g1, 0], rel=1e-5)
    # a positive advantage with s above 1 + eps is clipped: no gradient
    lp.grad = None
    pg, clipped = gspo_policy_loss(lp, old, -adv, mask, 0.2, 0.2)
    aggregate(pg, mask, "seq-mean-token-mean", 2.0).backward()
    assert pg[1, 1].item() == pytest.approx(-2.0 * 1.2, rel=1e-5) and clipped[1, 1] == 1
    assert lp.grad[1].abs().sum() == 0


def test_gspo_on_policy_is_the_plain_policy_gradient():
    """With pi_old = pi (one epoch), s_i = 1 and GSPO's gradient is -A_i / |y_i| on each token."""
    mask = torch.tensor([[1, 1, 0, 1]], dtype=torch.float32)
    lp = torch.tensor([[-1.0, -2.0, -3.0, -0.5]], requires_grad=True)
    pg, _ = gspo_policy_loss(lp, lp.detach(), torch.full((1, 4), 0.7), mask, 0.2, 0.2)
    aggregate(pg, mask, "sequence", 1.0).backward()
    assert lp.grad[0].tolist() == pytest.approx([-0.7 / 3, -0.7 / 3, 0, -0.7 / 3])


# -- loss aggregation ----------------------------------------------------------------------------------------
X = torch.tensor([[1.0, 2.0, 3.0, 0.0], [4.0, 0.0, 0.0, 0.0], [5.0, 6.0, 0.0, 0.0]])
M = torch.tensor([[1.0, 1.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])  # row 3: failed


@pytest.mark.parametrize("mode, expected", [
    ("token-mean", (1 + 2 + 3 + 4) / 4),
    ("token", (1 + 2 + 3 + 4) / 4),
    ("seq-mean-token-mean", (2 + 4) / 2),
    ("sequence", (2 + 4) / 2),
    ("seq-mean-token-sum", (6 + 4) / 2),
    ("seq-mean-token-sum-norm", (6 + 4) / (3 * 8)),  # 3 rows (the failed one too) x loss_norm_tokens 8
])
def test_aggregation_by_hand(mode, expected):
    assert aggregate(X, M, mode, normaliser(M, mode, 8.0)).item() == pytest.approx(expected)


@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm"])
def test_micro_batches_add_up_to_the_mini_batch(mode):
    norm = normaliser(M, mode, 8.0)
    whole = aggregate(X, M, mode, norm)
    parts = sum(aggregate(X[rows], M[rows], mode, norm) for rows in ([0], [1, 2]))
    assert parts.item() == pytest.approx(whole.item())


def test_default_aggregation_of_each_loss():
    assert effective_loss_agg(None) == "token-mean"
    assert effective_loss_agg(None, algorithm="dr_grpo") == "seq-mean-token-sum"
    assert effective_loss_agg(None, "gspo", "dr_grpo") == "seq-mean-token-mean"
    assert effective_loss_agg("token", "gspo", "dr_grpo") == "token-mean"  # an explicit choice wins
    assert effective_loss_agg("sequence") == "seq-mean-token-mean"


# -- adaptive KL controller (Ziegler et al. 2019, sec. 2.2) ------------------------------------------------
@pytest.mark.parametrize("kl, expected", [
    (0.15, 0.1 * (1 + 0.2 * 16 / 100)),   # error 0.5, clipped to 0.2
    (0.11, 0.1 * (1 + 0.1 * 16 / 100)),   # error 0.1
    (0.05, 0.1 * (1 - 0.2 * 16 / 100)),   # error -0.5, clipped to -0.2
    (0.1, 0.1),
])
def test_adaptive_kl_by_hand(kl, expected):
    assert adaptive_kl_coef(0.1, kl, target=0.1, episodes=16, horizon=100) == pytest.approx(expected)
