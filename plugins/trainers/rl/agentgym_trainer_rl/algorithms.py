"""Advantage estimators: plain functions of a :class:`~.batch.Batch` -> per-token advantages.

The update loop only ever sees ``batch.advantages`` (and ``batch.returns`` for a value
head); adding an algorithm means adding a function with ``@estimator(...)`` on it
(:mod:`.registry`; a package of your own registers its module through a hook). Recursions run
over *generated* tokens only, skipping observation tokens, so the reward of a turn (placed on
its last generated token) is never multiplied away by the loss mask. Torch is imported in the
functions, so that declaring them (checking a config) costs no torch.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Optional

from .registry import ESTIMATORS, estimator
from .sampling import TOLERANCE

if TYPE_CHECKING:
    import torch

    from .batch import Batch

#: ``all_reduce(tensor)`` summing over processes in place (None: single process).
AllReduce = Optional[Callable[["torch.Tensor"], "torch.Tensor"]]


@dataclass(frozen=True)
class EstimatorOptions:
    gamma: float = 1.0
    lam: float = 0.95
    #: GRPO: divide by the group's standard deviation (``dr_grpo`` never does).
    norm_std: bool = True
    #: GAE / REINFORCE++ (and its group-baseline form): whiten token advantages over the batch.
    whiten: bool = True
    eps: float = 1e-6
    #: Group estimators: ``episode`` or ``turn`` (see :func:`turn_returns`).
    credit: str = "episode"

    @classmethod
    def from_config(cls, tc: Any) -> "EstimatorOptions":
        """The estimator options of a trainer config (:class:`~.config.RLConfig`)."""
        return cls(gamma=tc.gamma, lam=tc.lam, norm_std=tc.norm_adv, whiten=tc.norm_adv, credit=tc.credit)


def masked_whiten(x: torch.Tensor, mask: torch.Tensor, eps: float = 1e-6, all_reduce: AllReduce = None) -> torch.Tensor:
    """(x - mean) / std over the tokens where *mask* is 1 (across processes when given)."""
    import torch

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


@estimator("ppo", "value head + GAE (Schulman et al. 2016), whitened over the batch", aliases=("gae",),
           needs_critic=True, methods=("PPO",))
def gae(batch: Batch, opt: EstimatorOptions, all_reduce: AllReduce = None) -> tuple[torch.Tensor, torch.Tensor]:
    """GAE (Schulman et al. 2016, eq. 16) with the value head's V on generated tokens.

    delta_t = r_t + gamma V_next - V_t and A_t = delta_t + gamma lambda A_next, where "next"
    is the next *generated* token (the observation in between is part of the transition).
    """
    import torch

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


# -- group estimators: GRPO, Dr. GRPO, RLOO, REINFORCE++-baseline -----------------------------------
#
# Each compares the episodes of a task group. A failed episode (env error) is in no group's
# statistics. A group built with one episode has no baseline and keeps its return (as verl does);
# a larger group that failures leave with one episode gets advantage 0 (see lone_groups).


def groups(batch: Batch) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Each task group's rows as boolean masks ``[B]``: (all its rows, its usable rows)."""
    import torch

    ok = ~batch.failed if batch.failed is not None else torch.ones(len(batch), dtype=torch.bool)
    out = []
    for g in batch.group_ids.unique():
        idx = batch.group_ids == g
        out.append((idx, idx & ok))
    return out


def lone_groups(batch: Batch) -> int:
    """Groups of more than one episode that failures left with exactly one usable episode."""
    return sum(int(rows.sum()) > 1 and int(usable.sum()) == 1 for rows, usable in groups(batch))


def turn_returns(batch: Batch, gamma: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Each turn's return G_k = sum_{j >= k} gamma^(j - k) r_j ``[B, K]``, and which turns have tokens.

    r_j is the sum of the token rewards on turn j's generated tokens (its outcome and shaping
    rewards; per-token KL in kl_mode reward). Discounting counts turns, not tokens.
    """
    import torch

    if batch.turn_ids is None:
        raise ValueError("turn-level credit needs batch.turn_ids (build_batch fills it)")
    ids, mask = batch.turn_ids, batch.loss_mask > 0
    k = int(ids.max()) + 1 if ids.numel() else 0
    per_turn = torch.zeros(len(batch), max(k, 1), dtype=batch.token_rewards.dtype)
    present = torch.zeros(len(batch), max(k, 1), dtype=torch.bool)
    on = mask & (ids >= 0)
    rows = torch.nonzero(on)
    per_turn.index_put_((rows[:, 0], ids[on]), batch.token_rewards[on], accumulate=True)
    present[rows[:, 0], ids[on]] = True
    returns = torch.zeros_like(per_turn)
    running = torch.zeros(len(batch), dtype=per_turn.dtype)
    for j in range(per_turn.shape[1] - 1, -1, -1):
        running = per_turn[:, j] + gamma * running
        returns[:, j] = running
    return returns * present, present


def _group_estimate(batch: Batch, opt: EstimatorOptions, baseline: Callable[[torch.Tensor], torch.Tensor]
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token advantages from *baseline* (the advantages of one comparison set's returns [n], n >= 2)
    and the tokens whose advantage had a comparison (all but lone ones).

    ``episode`` credit: one return per episode (the sum of its rewards), compared within the group.
    ``turn`` credit: turn k's return compared with the returns at turn k of the group's episodes that
    reached it (a turn index that only one of them reached has no baseline: 0).

    Returns that differ by no more than :data:`.sampling.TOLERANCE` are equal (what dynamic sampling
    and the no-signal warning count): their advantage is exactly 0. In float32 a group of eight -0.3
    returns would otherwise get (x - mean) / (std + eps) = -0.029 on every token (the mean is off by an
    ulp, and so is the std), a push on all the group's tokens that also kept its rows from being
    skipped. The baseline itself is computed in float64.
    """
    import torch

    if opt.credit == "turn":
        values, present = turn_returns(batch, opt.gamma)
    else:
        values, present = scores(batch)[:, None], (batch.loss_mask > 0).any(dim=1, keepdim=True)
    adv = torch.zeros_like(values)
    compared = torch.zeros_like(present)
    for rows, usable in groups(batch):
        single = int(rows.sum()) == 1  # a group of one by construction: no baseline, its own return
        for k in range(values.shape[1]):
            idx = usable & present[:, k]
            n = int(idx.sum())
            if n == 0 or (n == 1 and not single):
                continue
            compared[idx, k] = True
            group = values[idx, k]
            if single:
                adv[idx, k] = group
            elif float(group.max() - group.min()) > TOLERANCE:  # (equal returns: advantage 0, exactly)
                adv[idx, k] = baseline(group.double()).to(adv.dtype)
    if opt.credit != "turn":
        return _broadcast(adv[:, 0], batch), _broadcast(compared[:, 0].float(), batch)
    ids = batch.turn_ids.clamp(min=0)
    mask = batch.loss_mask * (batch.turn_ids >= 0)
    return adv.gather(1, ids) * mask, compared.float().gather(1, ids) * mask


@estimator("grpo", "R − group mean, divided by the group's std (Shao et al. 2024)", grouped=True, methods=("GRPO",))
def grpo(batch: Batch, opt: EstimatorOptions, all_reduce: AllReduce = None) -> tuple[torch.Tensor, None]:
    """GRPO (Shao et al. 2024, eq. 3): A_i = (R_i - mean(R_group)) / (std(R_group) + eps), every token.

    std is the unbiased (N - 1) one, as torch.std and verl; ``norm_std`` False leaves out the division.
    """

    def baseline(group: torch.Tensor) -> torch.Tensor:
        centred = group - group.mean()
        return centred / (group.std() + opt.eps) if opt.norm_std else centred

    return _group_estimate(batch, opt, baseline)[0], None


@estimator("dr_grpo", "R − group mean, no std, summed over tokens (Liu et al. 2025)", grouped=True,
           loss_agg="seq-mean-token-sum", methods=("Dr-GRPO",))
def dr_grpo(batch: Batch, opt: EstimatorOptions, all_reduce: AllReduce = None) -> tuple[torch.Tensor, None]:
    """Dr. GRPO (Liu et al. 2025, eq. 3): A_i = R_i - mean(R_group), never divided by the std.
    The other half of Dr. GRPO, no 1/|o_i|, is its loss aggregation (seq-mean-token-sum)."""
    return grpo(batch, replace(opt, norm_std=False), all_reduce)


@estimator("rloo", "R − mean of the group's other episodes (Ahmadian et al. 2024)", grouped=True, methods=("RLOO",))
def rloo(batch: Batch, opt: EstimatorOptions, all_reduce: AllReduce = None) -> tuple[torch.Tensor, None]:
    """RLOO (Ahmadian et al. 2024, eq. 6): A_i = R_i - mean of the *other* episodes of its group."""

    def baseline(group: torch.Tensor) -> torch.Tensor:
        return group - (group.sum() - group) / (group.numel() - 1)

    return _group_estimate(batch, opt, baseline)[0], None


def discounted_returns(rewards: torch.Tensor, mask: torch.Tensor, gamma: float) -> torch.Tensor:
    """G_t = r_t + gamma * G_next over generated tokens only (masked tokens are skipped, not zeroed)."""
    import torch

    out = torch.zeros_like(rewards)
    running = torch.zeros(rewards.shape[0], dtype=rewards.dtype)
    for t in range(rewards.shape[1] - 1, -1, -1):
        m = mask[:, t]
        running = torch.where(m > 0, rewards[:, t] + gamma * running, running)
        out[:, t] = running * m
    return out


@estimator("reinforce_pp", "discounted token returns, whitened over the batch (Hu 2025)",
           methods=("REINFORCE++", "REINFORCE++2"))  # REINFORCE++2: a spelling the seed API took, kept
def reinforce_pp(batch: Batch, opt: EstimatorOptions, all_reduce: AllReduce = None) -> tuple[torch.Tensor, torch.Tensor]:
    """REINFORCE++ (Hu 2025): discounted token returns, whitened over the whole batch."""
    returns = discounted_returns(batch.token_rewards, batch.loss_mask, opt.gamma)
    adv = masked_whiten(returns, batch.loss_mask, opt.eps, all_reduce) if opt.whiten else returns
    return adv, returns


@estimator("reinforce_pp_baseline", "R − group mean, whitened over the batch (Hu 2025)", grouped=True,
           methods=("REINFORCE++-baseline",))
def reinforce_pp_baseline(batch: Batch, opt: EstimatorOptions, all_reduce: AllReduce = None) -> tuple[torch.Tensor, None]:
    """REINFORCE++-baseline (Hu 2025, eq. 9): A_i = R_i - mean(R_group), then whitened over the batch's
    tokens (those with a comparison; a lone episode stays at 0)."""
    adv, compared = _group_estimate(batch, opt, lambda group: group - group.mean())
    if opt.whiten:
        adv = masked_whiten(adv, compared, opt.eps, all_reduce)
    return adv, None


#: :data:`.registry.ESTIMATORS` by its older name (``agentgym_trainer_rl.ALGORITHMS``): one table.
ALGORITHMS = ESTIMATORS
