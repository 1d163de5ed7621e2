"""What the policy's forward pass runs for a batch: its episodes, or their training segments.

An episode whose every reply was sampled from the episode before it runs as one row, as it is.
One with a reply sampled from another context (``Batch.segments``) runs as its segments instead:
each its context (not trained) and then its replies, so each reply is scored under exactly what
the model saw. The outputs come back in the batch's episode layout (``[B, L]``, token *i* of an
episode at position *i*), so advantages, KL, entropy, TIS and the losses never know the
difference. Segment rows of one group share their common prefix (the task's initial prompt)
through the same :class:`~agentgym_trainer_rl.batch.PrefixPlan` as whole episodes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from .batch import Batch, PrefixPlan, plan_prefixes


@dataclass
class ForwardRows:
    """Rows to run (``[R, L']``) and where each trained token goes in the episode layout ``shape``."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    loss_mask: torch.Tensor
    group_ids: torch.Tensor
    #: Trained token ``(row, position)`` in these rows -> ``(episode, position)`` in the batch.
    src: tuple[torch.Tensor, torch.Tensor]
    dst: tuple[torch.Tensor, torch.Tensor]
    shape: tuple[int, int]

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])

    @property
    def tokens(self) -> int:
        return int(self.attention_mask.sum())

    def prefix_plan(self, min_prefix: int = 16) -> PrefixPlan:
        return plan_prefixes(self.input_ids, self.attention_mask, self.loss_mask, self.group_ids, min_prefix)

    def to(self, device: str | torch.device) -> "ForwardRows":
        src = (self.src[0].to(device), self.src[1].to(device))
        dst = (self.dst[0].to(device), self.dst[1].to(device))
        return ForwardRows(self.input_ids.to(device), self.attention_mask.to(device), self.loss_mask.to(device),
                           self.group_ids, src, dst, self.shape)

    def to_episodes(self, values: torch.Tensor) -> torch.Tensor:
        """Per-token *values* of these rows (``[R, L']``) in the episode layout (0 where nothing is trained);
        differentiable, so a loss on the result trains the rows."""
        out = values.new_zeros(self.shape)
        return out.index_put(self.dst, values[self.src])


def row_tokens(batch: Batch) -> torch.Tensor:
    """Per episode of *batch*, the tokens its forward rows hold: the episode's length, or the summed
    lengths of its segments that train something (what :func:`forward_rows` lays out for it)."""
    lengths = batch.attention_mask.sum(-1).long()
    if batch.segments is None:
        return lengths
    out = lengths.clone()
    for b, segs in enumerate(batch.segments):
        if segs is not None:
            out[b] = sum(len(positions) for positions, own in segs
                         if bool((batch.loss_mask[b, positions] * own).any()))
    return out


def forward_rows(batch: Batch) -> ForwardRows | None:
    """The segment rows of *batch*, or None when every episode runs as it is (no ``segments``)."""
    if batch.segments is None or all(s is None for s in batch.segments):
        return None
    seqs: list[tuple[int, torch.Tensor, torch.Tensor]] = []  # (episode, positions, trained mask)
    for b, segs in enumerate(batch.segments):
        if segs is None:
            n = int(batch.attention_mask[b].sum())
            seqs.append((b, torch.arange(n), batch.loss_mask[b, :n]))
            continue
        for positions, own in segs:
            trained = batch.loss_mask[b, positions] * own
            if bool(trained.any()):  # a reply of no tokens has nothing to score
                seqs.append((b, positions, trained))
    if not seqs:  # nothing trained at all (failed episodes): one row keeps the pass well-formed
        n = int(batch.attention_mask[0].sum())
        seqs.append((0, torch.arange(n), batch.loss_mask[0, :n]))
    width = max(len(p) for _, p, _ in seqs)
    rows = len(seqs)
    ids = torch.zeros((rows, width), dtype=batch.input_ids.dtype)
    attention = torch.zeros((rows, width), dtype=batch.attention_mask.dtype)
    mask = torch.zeros((rows, width), dtype=batch.loss_mask.dtype)
    groups = torch.empty(rows, dtype=batch.group_ids.dtype)
    src_r, src_p, dst_b, dst_p = [], [], [], []
    for r, (b, positions, trained) in enumerate(seqs):
        n = len(positions)
        ids[r, :n] = batch.input_ids[b, positions]
        attention[r, :n] = 1
        mask[r, :n] = trained
        groups[r] = batch.group_ids[b]
        where = torch.nonzero(trained > 0).flatten()
        src_r.append(torch.full_like(where, r))
        src_p.append(where)
        dst_b.append(torch.full_like(where, b))
        dst_p.append(positions[where])
    cat = torch.cat
    return ForwardRows(ids, attention, mask, groups, (cat(src_r), cat(src_p)), (cat(dst_b), cat(dst_p)),
                       tuple(batch.input_ids.shape))


def forward_work(attention_mask: torch.Tensor, loss_mask: torch.Tensor, plan: Optional[PrefixPlan]) -> dict[str, float]:
    """What one policy forward over these rows computes, for :mod:`agentgym_core.profiling`: ``tokens``
    run (real tokens, less those a shared prefix ran once for many rows), ``attended`` (query-key pairs
    of causal attention over them) and ``head`` (positions the LM head ran: the trained ones)."""
    lengths = attention_mask.sum(dim=1).double()
    tokens = float(lengths.sum())
    attended = float((lengths * (lengths + 1) / 2).sum())
    if plan is not None and plan.shares:
        tokens -= plan.saved_tokens
        for rows, p in plan.segments:  # each row's shared prefix ran once: its pairs, less once per segment
            if p > 0:
                attended -= (len(rows) - 1) * p * (p + 1) / 2
    return {"tokens": tokens, "attended": attended, "head": float((loss_mask[:, 1:] > 0).sum())}
