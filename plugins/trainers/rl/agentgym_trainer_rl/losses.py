"""Per-token loss terms and their aggregation (all tensors ``[B, L]``, masked by ``mask``)."""
from __future__ import annotations

import torch


def kl_estimate(logprobs: torch.Tensor, ref_logprobs: torch.Tensor, kind: str) -> torch.Tensor:
    """KL(pi || ref) per token (Schulman 2020, "Approximating KL divergence").

    ``k1`` = log pi - log ref (unbiased, high variance); ``k3`` = exp(ref - pi) - (ref - pi) - 1
    (unbiased, non-negative, low variance).
    """
    diff = ref_logprobs - logprobs
    if kind == "k1":
        return -diff
    if kind == "k3":
        return torch.exp(diff.clamp(-20, 20)) - diff - 1
    raise ValueError(f"unknown KL estimator {kind!r}; use k1 or k3")


def clipped_policy_loss(
    logprobs: torch.Tensor, old_logprobs: torch.Tensor, advantages: torch.Tensor, clip_low: float, clip_high: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """PPO clipped surrogate (Schulman et al. 2017, eq. 7), as a per-token loss; and clipped flags."""
    ratio = torch.exp((logprobs - old_logprobs).clamp(-20, 20))
    unclipped = -advantages * ratio
    clipped = -advantages * ratio.clamp(1 - clip_low, 1 + clip_high)
    return torch.maximum(unclipped, clipped), (clipped > unclipped).float()


def value_loss(values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, clip: float) -> torch.Tensor:
    """0.5 * max((V - R)^2, (V_clipped - R)^2) per token (value clipping as in PPO2)."""
    v_clipped = old_values + (values - old_values).clamp(-clip, clip)
    return 0.5 * torch.maximum((values - returns) ** 2, (v_clipped - returns) ** 2)


def aggregate(x: torch.Tensor, mask: torch.Tensor, mode: str, norm: float) -> torch.Tensor:
    """Sum a per-token term into a scalar.

    ``token``: sum over tokens / *norm* (the mini-batch's token count): every token weighs the
    same. ``sequence``: each sequence's token mean, summed / *norm* (the mini-batch's sequence
    count): every episode weighs the same. *norm* spans the whole mini-batch so that
    gradient-accumulated micro-batches add up to the mini-batch loss.
    """
    if mode == "token":
        return (x * mask).sum() / max(norm, 1.0)
    if mode == "sequence":
        per_seq = (x * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
        return per_seq.sum() / max(norm, 1.0)
    raise ValueError(f"unknown loss aggregation {mode!r}; use token or sequence")


def normaliser(mask: torch.Tensor, mode: str) -> float:
    """The *norm* :func:`aggregate` needs for a mini-batch with loss mask *mask*."""
    if mode == "token":
        return float(mask.sum())
    return float((mask.sum(dim=1) > 0).sum())
