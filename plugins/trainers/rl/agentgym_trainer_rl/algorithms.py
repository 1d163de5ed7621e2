"""Advantage estimators: plain functions of a :class:`~.batch.Batch` -> per-token advantages.

The update loop only ever sees ``batch.advantages`` (and ``batch.returns`` for a value
head); adding an algorithm means adding a function and a row in :data:`ALGORITHMS`.
Recursions run over *generated* tokens only, skipping observation tokens, so the reward of
a turn (placed on its last generated token) is never multiplied away by the loss mask.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import torch

from .batch import Batch

#: ``all_reduce(tensor)`` summing over processes in place (None: single process).
AllReduce = Optional[Callable[[torch.Tensor], torch.Tensor]]


@dataclass(frozen=True)
class Options:
    gamma: float = 1.0
    lam: float = 0.95
    #: GRPO: divide by the group's standard deviation (Dr. GRPO sets this False).
    norm_std: bool = True
    #: GAE / REINFORCE++: whiten token advantages over the batch.
    whiten: bool = True
    eps: float = 1e-6


def masked_whiten(x: torch.Tensor, mask: torch.Tensor, eps: float = 1e-6, all_reduce: AllReduce = None) -> torch.Tensor:
    """(x - mean) / std over the tokens where *mask* is 1 (across processes when given)."""
    stats = torch.stack([(x * mask).sum(), (x * x * mask).sum(), mask.sum()]).double()
    if all_reduce is not None:
        all_reduce(stats)
    total, sq, count = stats.tolist()
    if count == 0:
        return x * 0
    mean = total / count
    var = max(sq / count - mean * mean, 0.0)
    return ((x - mean) / (var ** 0.5 + eps)) * mask


def scores(batch: Batch) -> torch.Tensor:
    """Each episode's total reward ``[B]`` (all rewards sit on generated tokens)."""
    return (batch.token_rewards * batch.loss_mask).sum(dim=1)


def _broadcast(per_episode: torch.Tensor, batch: Batch) -> torch.Tensor:
    return per_episode[:, None] * batch.loss_mask


def grpo(batch: Batch, opt: Options, all_reduce: AllReduce = None) -> tuple[torch.Tensor, None]:
    """GRPO (Shao et al. 2024, eq. 3): A_i = (R_i - mean(R_group)) / std(R_group), every token."""
    r = scores(batch)
    adv = torch.zeros_like(r)
    for g in batch.group_ids.unique():
        idx = batch.group_ids == g
        group = r[idx]
        if group.numel() == 1:
            adv[idx] = group  # no baseline from a group of one
            continue
        centred = group - group.mean()
        adv[idx] = centred / (group.std() + opt.eps) if opt.norm_std else centred
    return _broadcast(adv, batch), None


def rloo(batch: Batch, opt: Options, all_reduce: AllReduce = None) -> tuple[torch.Tensor, None]:
    """RLOO (Ahmadian et al. 2024): A_i = R_i - mean of the *other* episodes of its group."""
    r = scores(batch)
    adv = torch.zeros_like(r)
    for g in batch.group_ids.unique():
        idx = batch.group_ids == g
        group = r[idx]
        n = group.numel()
        adv[idx] = group if n == 1 else group - (group.sum() - group) / (n - 1)
    return _broadcast(adv, batch), None


def discounted_returns(rewards: torch.Tensor, mask: torch.Tensor, gamma: float) -> torch.Tensor:
    """G_t = r_t + gamma * G_next over generated tokens only (masked tokens are skipped, not zeroed)."""
    out = torch.zeros_like(rewards)
    running = torch.zeros(rewards.shape[0], dtype=rewards.dtype)
    for t in range(rewards.shape[1] - 1, -1, -1):
        m = mask[:, t]
        running = torch.where(m > 0, rewards[:, t] + gamma * running, running)
        out[:, t] = running * m
    return out


def reinforce_pp(batch: Batch, opt: Options, all_reduce: AllReduce = None) -> tuple[torch.Tensor, torch.Tensor]:
    """REINFORCE++ (Hu 2025): discounted token returns, whitened over the whole batch."""
    returns = discounted_returns(batch.token_rewards, batch.loss_mask, opt.gamma)
    adv = masked_whiten(returns, batch.loss_mask, opt.eps, all_reduce) if opt.whiten else returns
    return adv, returns


def gae(batch: Batch, opt: Options, all_reduce: AllReduce = None) -> tuple[torch.Tensor, torch.Tensor]:
    """GAE (Schulman et al. 2016, eq. 16) with the value head's V on generated tokens.

    delta_t = r_t + gamma V_next - V_t and A_t = delta_t + gamma lambda A_next, where "next"
    is the next *generated* token (the observation in between is part of the transition).
    """
    if batch.values is None:
        raise ValueError("GAE needs batch.values from a value head")
    mask, values, rewards = batch.loss_mask, batch.values * batch.loss_mask, batch.token_rewards
    adv = torch.zeros_like(rewards)
    last = torch.zeros(rewards.shape[0], dtype=rewards.dtype)
    next_value = torch.zeros_like(last)
    for t in range(rewards.shape[1] - 1, -1, -1):
        m = mask[:, t] > 0
        delta = rewards[:, t] + opt.gamma * next_value - values[:, t]
        last = torch.where(m, delta + opt.gamma * opt.lam * last, last)
        next_value = torch.where(m, values[:, t], next_value)
        adv[:, t] = torch.where(m, last, torch.zeros_like(last))
    returns = (adv + values) * mask
    if opt.whiten:
        adv = masked_whiten(adv, mask, opt.eps, all_reduce)
    return adv, returns


@dataclass(frozen=True)
class Algorithm:
    estimate: Callable[..., tuple[torch.Tensor, Optional[torch.Tensor]]]
    #: Train a value head on ``batch.returns`` (PPO).
    needs_value: bool = False


ALGORITHMS: dict[str, Algorithm] = {
    "ppo": Algorithm(gae, needs_value=True),
    "gae": Algorithm(gae, needs_value=True),
    "grpo": Algorithm(grpo),
    "rloo": Algorithm(rloo),
    "reinforce_pp": Algorithm(reinforce_pp),
}
