"""Trajectories -> padded tensors, with each turn's reward on the last token it generated.

Every tensor is ``[B, L]`` and aligned with ``token_ids``: position *i* holds token *i*.
The log-probability of token *i* comes from the logits at position *i - 1*, so position 0
(always a prompt token) is never trained.

An episode whose replies were sampled from contexts other than its own prefix (a history
window, a pinned plan: ``Turn.context``) keeps this layout for everything the algorithm does
(advantages, KL, losses); only the policy's forward pass runs it as its training segments
(:mod:`agentgym_trainer_rl.rows`), each reply under the exact context it was sampled from.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Sequence

import torch


@dataclass
class Batch:
    input_ids: torch.Tensor  # [B, L] long, right-padded with 0
    attention_mask: torch.Tensor  # [B, L] long
    loss_mask: torch.Tensor  # [B, L] float, 1 on generated tokens of usable episodes
    token_rewards: torch.Tensor  # [B, L] float, turn k's reward at turns[k].end - 1
    group_ids: torch.Tensor  # [B] long
    #: Filled by the trainer before advantages: old policy / reference log-probs, values.
    old_logprobs: torch.Tensor | None = None
    ref_logprobs: torch.Tensor | None = None
    values: torch.Tensor | None = None
    #: Filled by the algorithm.
    advantages: torch.Tensor | None = None
    returns: torch.Tensor | None = None
    #: [B] bool: the episode failed on an env error (no loss, in no group's baseline).
    failed: torch.Tensor | None = None
    #: [B, L] long: the turn index of each generated token of a usable episode, -1 elsewhere.
    turn_ids: torch.Tensor | None = None
    #: [B, L] float: the sampler's log-prob of each generated token (``Trajectory.logprobs``), 0 elsewhere.
    sampler_logprobs: torch.Tensor | None = None
    #: Per row: None when the episode runs as it is (every reply sampled from the episode before it),
    #: else its training segments as ``(positions, trained)`` tensors: the episode positions of the
    #: segment's tokens, and which of them are the segment's own replies (see ``build_batch``).
    segments: list[list[tuple[torch.Tensor, torch.Tensor]] | None] | None = None

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])

    def select(self, rows: torch.Tensor | Sequence[int]) -> "Batch":
        """The sub-batch of *rows*, cut after its last trained token.

        Every output of the update (log-probs, entropy, KL, values) sits on a trained token, and
        a causal model's outputs there do not depend on later tokens, so the tokens after a row's
        last generated one (an episode's final observation; all of a failed episode) need not run.
        """
        rows = torch.as_tensor(rows, dtype=torch.long)
        trained = self.loss_mask[rows] > 0
        positions = torch.arange(1, trained.shape[1] + 1)
        length = max(1, int((trained * positions).max().item())) if len(rows) else 1
        if self.segments is not None:  # a segment's context may reach past its last trained token
            ends = [int(pos[-1]) + 1 for r in rows.tolist() for pos, _ in (self.segments[r] or ()) if len(pos)]
            length = max([length, *ends])
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                out[f.name] = None
            elif isinstance(value, list):
                out[f.name] = [value[r] for r in rows.tolist()]
            elif value.dim() == 1:
                out[f.name] = value[rows]
            else:
                out[f.name] = value[rows, :length]
        return Batch(**out)

    def prefix_plan(self, min_prefix: int = 16) -> "PrefixPlan":
        """How the rows can share forward passes over common prefixes (see :class:`PrefixPlan`).

        Rows of one group (a GRPO group: the same task, so the same prompt) usually start with
        the same tokens, and rows of every group with the same system prompt and instruction.
        A prefix stops before the last token ahead of a row's first generated one, so every
        trained position's hidden state is computed after it. Prefixes shorter than
        *min_prefix* are not shared.
        """
        return plan_prefixes(self.input_ids, self.attention_mask, self.loss_mask, self.group_ids, min_prefix)


def plan_prefixes(input_ids: torch.Tensor, attention_mask: torch.Tensor, loss_mask: torch.Tensor,
                  group_ids: torch.Tensor, min_prefix: int = 16) -> "PrefixPlan":
    """:meth:`Batch.prefix_plan` for any rows (an episode batch, or its training segments)."""
    width = input_ids.shape[1]
    lengths = attention_mask.sum(dim=1)
    trained = loss_mask > 0
    # A row without a trained token (a failed episode) does not limit the prefix.
    first = torch.where(trained.any(dim=1), trained.float().argmax(dim=1), lengths)

    def common(rows: torch.Tensor) -> int:
        ids = input_ids[rows]
        differ = (ids != ids[:1]).any(dim=0)
        lcp = int(differ.float().argmax()) if bool(differ.any()) else width
        return min(lcp, int(first[rows].min()) - 1, int(lengths[rows].min()) - 1)

    minimum = max(1, min_prefix)
    groups = [torch.nonzero(group_ids == g).flatten() for g in torch.unique(group_ids)]
    base = common(torch.arange(len(input_ids))) if len(groups) > 1 else 0
    base = base if base >= minimum else 0
    segments: list[tuple[torch.Tensor, int]] = []
    alone: list[torch.Tensor] = []
    for rows in groups:
        p = common(rows) if len(rows) > 1 else 0
        if p >= minimum and p > base:
            segments.append((rows, p))
        else:
            alone.append(rows)
    if alone:
        segments.append((torch.cat(alone), base))
    return PrefixPlan(base, segments)


@dataclass
class PrefixPlan:
    """Rows grouped by the prefix they share. Tokens ``[0, base)`` are common to every row and
    run once (``base`` 0: nothing common); each segment's rows agree on tokens ``[0, p)``
    (``p >= base``, or 0 for rows that share nothing), which run once more for the segment
    past ``base``. The segments cover every row exactly once."""

    base: int
    segments: list[tuple[torch.Tensor, int]]

    @property
    def saved_tokens(self) -> int:
        """Tokens not run because they were shared (against running every row whole)."""
        ran = self.base + sum(p - self.base for _, p in self.segments if p > self.base)
        return sum(len(rows) * p for rows, p in self.segments) - ran

    @property
    def shares(self) -> bool:
        return self.base > 0 or any(p > 0 for _, p in self.segments)


def build_batch(trajectories: Sequence[Any], pad_id: int = 0) -> Batch:
    """Pad *trajectories* into a :class:`Batch`. Failed episodes get an all-zero loss mask and
    ``failed`` set, which keeps them out of group baselines.

    A turn's reward goes on token ``turns[k].end - 1``, which the model generated, so an
    episode that ends on an observation still carries its outcome reward into training.
    An episode with a reply sampled from another context than its prefix gets its training
    segments (:func:`agentgym_core.rollout.segments.training_segments`) in ``Batch.segments``.
    """
    from agentgym_core import needs_segments, training_segments

    if not trajectories:
        raise ValueError("cannot build a batch from zero trajectories")
    length = max(len(t.token_ids) for t in trajectories)
    n = len(trajectories)
    input_ids = torch.full((n, length), pad_id, dtype=torch.long)
    attention = torch.zeros((n, length), dtype=torch.long)
    loss_mask = torch.zeros((n, length), dtype=torch.float32)
    rewards = torch.zeros((n, length), dtype=torch.float32)
    groups = torch.zeros(n, dtype=torch.long)
    failed = torch.zeros(n, dtype=torch.bool)
    turn_ids = torch.full((n, length), -1, dtype=torch.long)
    sampler = torch.zeros((n, length), dtype=torch.float32)
    segments: list[list[tuple[torch.Tensor, torch.Tensor]] | None] = [None] * n
    for i, traj in enumerate(trajectories):
        ids = traj.token_ids
        input_ids[i, : len(ids)] = torch.tensor(ids, dtype=torch.long)
        attention[i, : len(ids)] = 1
        groups[i] = int(traj.group_id)
        if getattr(traj, "failed", False):
            failed[i] = True
            continue
        loss_mask[i, : len(ids)] = torch.tensor(traj.loss_mask, dtype=torch.float32)
        loss_mask[i, 0] = 0.0
        if len(traj.logprobs) == len(ids):
            sampler[i, : len(ids)] = torch.tensor(traj.logprobs, dtype=torch.float32)
        for k, turn in enumerate(traj.turns):
            turn_ids[i, turn.start: turn.end] = k
        if needs_segments(traj):
            segments[i] = [_layout(seg, traj.turns) for seg in training_segments(traj)]
        turn_rewards = list(traj.rewards) or [0.0] * len(traj.turns)
        for turn, reward in zip(traj.turns, turn_rewards):
            if turn.end <= turn.start:
                # A turn with no generated token cannot carry a reward; give it to the last
                # generated token before it so the outcome is still trained on.
                before = torch.nonzero(loss_mask[i, : turn.start]).flatten()
                if len(before) == 0:
                    continue
                rewards[i, int(before[-1])] += float(reward)
            else:
                rewards[i, turn.end - 1] += float(reward)
    turn_ids[loss_mask == 0] = -1
    return Batch(input_ids, attention, loss_mask, rewards, groups, failed=failed, turn_ids=turn_ids,
                 sampler_logprobs=sampler * loss_mask,
                 segments=segments if any(s is not None for s in segments) else None)


def _layout(segment: Any, turns: Sequence[Any]) -> tuple[torch.Tensor, torch.Tensor]:
    """A segment's episode positions, and which of them are its own replies' tokens."""
    positions = torch.tensor(segment.positions(), dtype=torch.long)
    own = torch.zeros(len(positions), dtype=torch.bool)
    for k in segment.turns:
        own |= (positions >= turns[k].start) & (positions < turns[k].end)
    return positions, own
