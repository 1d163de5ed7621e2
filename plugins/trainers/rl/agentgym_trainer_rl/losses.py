"""Per-token loss terms and their aggregation (all tensors ``[B, L]``, masked by ``mask``).

A policy loss is a function with ``@policy_loss(...)`` on it (:mod:`.registry`). Torch is imported in
the functions, so that declaring them (checking a config) costs no torch.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .config import KL_ESTIMATORS, LOSS_AGGS
from .registry import policy_loss

if TYPE_CHECKING:
    import torch


def kl_estimate(logprobs: torch.Tensor, ref_logprobs: torch.Tensor, kind: str, clamp: Optional[float] = None) -> torch.Tensor:
    """KL(pi || ref) per token from samples of pi (Schulman 2020, "Approximating KL divergence").

    With r = ref / pi: ``k1`` = -log r (unbiased, high variance, can be negative); ``k2`` =
    (log r)^2 / 2 (biased, low variance; its gradient is the true KL's); ``k3`` = (r - 1) - log r
    (unbiased, non-negative, low variance); ``abs`` = |log r|. *clamp* bounds the estimate to
    [-clamp, clamp] (verl bounds k3 at 10: without it exp grows the penalty without limit).
    """
    import torch

    diff = ref_logprobs - logprobs  # log r
    kind = KL_ESTIMATORS.get(kind, kind)
    if kind == "k1":
        kl = -diff
    elif kind == "k2":
        kl = 0.5 * diff.square()
    elif kind == "k3":
        kl = torch.exp(diff.clamp(-20, 20)) - diff - 1
    elif kind == "abs":
        kl = diff.abs()
    else:
        raise ValueError(f"unknown KL estimator {kind!r}; use {', '.join(KL_ESTIMATORS)}")
    return kl if clamp is None else kl.clamp(-clamp, clamp)


def clipped_policy_loss(
    logprobs: torch.Tensor, old_logprobs: torch.Tensor, advantages: torch.Tensor, clip_low: float, clip_high: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """PPO clipped surrogate (Schulman et al. 2017, eq. 7), as a per-token loss; and clipped flags."""
    import torch

    ratio = torch.exp((logprobs - old_logprobs).clamp(-20, 20))
    unclipped = -advantages * ratio
    clipped = -advantages * ratio.clamp(1 - clip_low, 1 + clip_high)
    return torch.maximum(unclipped, clipped), (clipped > unclipped).float()


@policy_loss("ppo", "clipped surrogate on each token's ratio (Schulman et al. 2017)")
def ppo_policy_loss(
    logprobs: torch.Tensor, old_logprobs: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
    clip_low: float, clip_high: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`clipped_policy_loss` in the signature every registered policy loss has (its ratio is per
    token: the mask is not needed)."""
    return clipped_policy_loss(logprobs, old_logprobs, advantages, clip_low, clip_high)


@policy_loss("gspo", "clipped surrogate on the episode's sequence ratio (Zheng et al. 2025)",
             loss_agg="seq-mean-token-mean")
def gspo_policy_loss(
    logprobs: torch.Tensor, old_logprobs: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
    clip_low: float, clip_high: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """GSPO (Zheng et al. 2025, eqs. 5-7): PPO's clip on the sequence ratio s_i, the geometric mean of
    its tokens' ratios, exp(mean_t (log pi - log pi_old)) over the episode's generated tokens.

    Per token s_i,t = sg[s_i] * pi_t / sg[pi_t]: its value is s_i and its gradient s_i * grad log pi_t,
    so a seq-mean-token-mean aggregation gives eq. 7's gradient. log s_i,t is capped at 10 (as verl).
    """
    import torch

    lengths = mask.sum(dim=1).clamp(min=1.0)
    log_seq = ((logprobs - old_logprobs) * mask).sum(dim=1) / lengths
    log_ratio = (logprobs - logprobs.detach() + log_seq.detach()[:, None]).clamp(max=10.0)
    ratio = torch.exp(log_ratio)
    unclipped = -advantages * ratio
    clipped = -advantages * ratio.clamp(1 - clip_low, 1 + clip_high)
    return torch.maximum(unclipped, clipped), (clipped > unclipped).float()


def dual_clip(pg: torch.Tensor, advantages: torch.Tensor, clip_c: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Dual-clip PPO (Ye et al. 2020, eq. 5): where A < 0 the loss is at most -A * clip_c, so a
    ratio far above 1 (a stale or off-policy sample) cannot push a token down without bound.
    Returns the loss and where the second clip applied."""
    import torch

    bound = -advantages * clip_c
    lower = (advantages < 0) & (pg > bound)
    return torch.where(advantages < 0, torch.minimum(pg, bound), pg), lower.float()


def value_loss(values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, clip: float) -> torch.Tensor:
    """0.5 * max((V - R)^2, (V_clipped - R)^2) per token (value clipping as in PPO2)."""
    import torch

    v_clipped = old_values + (values - old_values).clamp(-clip, clip)
    return 0.5 * torch.maximum((values - returns) ** 2, (v_clipped - returns) ** 2)


def aggregate(x: torch.Tensor, mask: torch.Tensor, mode: str, norm: float) -> torch.Tensor:
    """Sum a per-token term into a scalar; *norm* is :func:`normaliser` of the whole mini-batch, so that
    gradient-accumulated micro-batches add up to the mini-batch loss.

    ``token-mean`` (``token``): sum over tokens / the mini-batch's token count; every token weighs
    the same. ``seq-mean-token-mean`` (``sequence``): each sequence's token mean, summed / the
    sequence count; every episode weighs the same. ``seq-mean-token-sum``: each sequence's token
    sum, summed / the sequence count (Dr. GRPO's 1/G sum_i sum_t: no 1/|o_i| length bias).
    ``seq-mean-token-sum-norm``: the same over (rows × a constant token count) instead.
    """
    mode = LOSS_AGGS.get(mode, mode)
    if mode == "token-mean":
        return (x * mask).sum() / max(norm, 1.0)
    if mode == "seq-mean-token-mean":
        per_seq = (x * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
        return per_seq.sum() / max(norm, 1.0)
    if mode in ("seq-mean-token-sum", "seq-mean-token-sum-norm"):
        return (x * mask).sum() / (max(norm, 1.0) if mode == "seq-mean-token-sum" else norm)
    raise ValueError(f"unknown loss aggregation {mode!r}; use {', '.join(LOSS_AGGS)}")


def normaliser(mask: torch.Tensor, mode: str, norm_tokens: float = 1.0) -> float:
    """The *norm* :func:`aggregate` needs for a mini-batch with loss mask *mask*.

    Token count; or the count of sequences with a trained token; or, for seq-mean-token-sum-norm,
    rows × *norm_tokens*, a constant (failed episodes count as rows), as Dr. GRPO's normaliser is.
    """
    mode = LOSS_AGGS.get(mode, mode)
    if mode == "token-mean":
        return float(mask.sum())
    if mode == "seq-mean-token-sum-norm":
        return float(mask.shape[0]) * norm_tokens
    return float((mask.sum(dim=1) > 0).sum())


def adaptive_kl_coef(coef: float, kl: float, target: float, episodes: float, horizon: float) -> float:
    """Ziegler et al. 2019, sec. 2.2: coef * (1 + clip(kl / target - 1, -0.2, 0.2) * episodes / horizon)
    (verl's AdaptiveKLController, with the step's episodes as n_steps)."""
    error = min(max(kl / target - 1.0, -0.2), 0.2)
    return coef * (1.0 + error * episodes / horizon)
