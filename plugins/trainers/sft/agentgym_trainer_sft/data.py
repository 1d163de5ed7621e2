"""Conversations -> training rows: token ids and loss masks exactly as a rollout holds them, packed or padded.

Each conversation is tokenised by core's :func:`~agentgym_core.conversation.encode_conversation`
(the rollout's own episode builder), so the loss falls on the reply tokens and end-of-turn
markers the agent generates, never on the prompt, the instruction or an observation. With
packing, several conversations share a row; each keeps its own positions and attends only to
itself (a block-diagonal causal mask), so a packed row trains exactly as its parts would alone.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Sequence

import torch


@dataclass
class Example:
    ids: list[int]
    mask: list[int]
    where: str = ""


@dataclass
class Row:
    """One row of a batch: one conversation, or several packed."""

    parts: list[Example] = field(default_factory=list)

    @property
    def length(self) -> int:
        return sum(len(p.ids) for p in self.parts)


@dataclass
class Encoded:
    rows: list[Row]
    conversations: int
    #: Conversations cut at ``max_length`` and how many reply tokens that dropped.
    truncated: int = 0
    dropped_tokens: int = 0
    #: Conversations left out: nothing to train on within ``max_length``.
    skipped: int = 0
    fingerprint: str = ""


def encode_all(conversations: Sequence[dict[str, Any]], chat: Any, *, max_length: int, packing: bool) -> Encoded:
    """Tokenise every conversation (``{"messages": ...}``) with *chat*, cut to *max_length*, pack if asked."""
    from agentgym_core import ConversationError, encode_conversation

    examples, truncated, dropped, skipped = [], 0, 0, 0
    digest = hashlib.sha256()
    for row in conversations:
        where = str(row.get("_where", ""))
        try:
            ids, mask = encode_conversation(chat, row["messages"])
        except ConversationError as exc:
            raise ConversationError(f"{where}: {exc}") from None
        digest.update(json.dumps([ids, mask]).encode())
        if len(ids) > max_length:
            truncated += 1
            dropped += sum(mask[max_length:])
            ids, mask = ids[:max_length], mask[:max_length]
        if sum(mask[1:]) == 0:
            skipped += 1
            continue
        examples.append(Example(ids, mask, where))
    rows = pack(examples, max_length) if packing else [Row([e]) for e in examples]
    return Encoded(rows, len(conversations), truncated, dropped, skipped, digest.hexdigest()[:16])


def pack(examples: Sequence[Example], length: int) -> list[Row]:
    """First-fit decreasing: each example into the first row it fits, longest first (deterministic)."""
    rows: list[Row] = []
    for ex in sorted(examples, key=lambda e: -len(e.ids)):
        for row in rows:
            if row.length + len(ex.ids) <= length:
                row.parts.append(ex)
                break
        else:
            rows.append(Row([ex]))
    return rows


@dataclass
class Batch:
    input_ids: torch.Tensor  # [B, L]
    #: [B, L] (padded rows) or [B, 1, L, L] boolean (packed rows: True where a position may attend).
    attention_mask: torch.Tensor
    position_ids: torch.Tensor  # [B, L]
    loss_mask: torch.Tensor  # [B, L] float: 1 where token t is trained (predicted from t - 1)

    @property
    def tokens(self) -> int:
        return int(self.loss_mask.sum().item())


def collate(rows: Sequence[Row], pad_id: int) -> Batch:
    """Right-padded tensors for *rows*; a packed row gets a block-diagonal causal mask and positions that
    restart at every conversation."""
    width = max(r.length for r in rows)
    n = len(rows)
    ids = torch.full((n, width), pad_id, dtype=torch.long)
    loss = torch.zeros((n, width))
    positions = torch.zeros((n, width), dtype=torch.long)
    packed = any(len(r.parts) > 1 for r in rows)
    if packed:
        attention = torch.zeros((n, 1, width, width), dtype=torch.bool)
    else:
        attention = torch.zeros((n, width), dtype=torch.long)
    for i, row in enumerate(rows):
        at = 0
        for part in row.parts:
            k = len(part.ids)
            ids[i, at:at + k] = torch.tensor(part.ids)
            loss[i, at:at + k] = torch.tensor(part.mask, dtype=torch.float32)
            loss[i, at] = 0.0  # a conversation's first token has nothing before it to be predicted from
            positions[i, at:at + k] = torch.arange(k)
            if packed:
                attention[i, 0, at:at + k, at:at + k] = torch.ones(k, k, dtype=torch.bool).tril()
            else:
                attention[i, at:at + k] = 1
            at += k
        if packed and at < width:  # padding attends to itself only (a row of all False makes NaNs)
            attention[i, 0, at:, at:] = torch.eye(width - at, dtype=torch.bool)
    return Batch(ids, attention, positions, loss)
