"""Batched token sampling: temperature, top-p, one uniform draw per row from the row's own generator.

Every row of a batch is sampled by a handful of tensor ops on the whole batch (one host sync
per decode step, not several per row), and a row's token depends only on its own logits and
uniform draw, so a request samples the same tokens alone or in any batch.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch

#: Nucleus candidates looked at before falling back to sorting the whole vocabulary.
TOP_CANDIDATES = 256


def sample_tokens(
    logits: torch.Tensor, temperatures: Sequence[float], top_ps: Sequence[float], uniforms: Sequence[float]
) -> torch.Tensor:
    """Token ids, one per row of *logits* ``[rows, vocab]``: argmax where the temperature is <= 0.

    Otherwise row ``i`` draws from ``softmax(logits[i] / temperatures[i])`` truncated to its
    top-``top_ps[i]`` nucleus (the smallest set of most likely tokens whose mass reaches it),
    by inverting the kept mass at ``uniforms[i]`` in [0, 1). The nucleus is looked for among
    the top :data:`TOP_CANDIDATES` tokens first, so a peaked distribution never sorts the
    whole vocabulary (a full sort of 49k logits costs ~10 ms a row on CPU, more than a small
    model's forward).
    """
    rows, vocab = logits.shape
    out = torch.argmax(logits, dim=-1)
    plain = [i for i in range(rows) if temperatures[i] > 0 and top_ps[i] >= 1.0]
    nucleus = [i for i in range(rows) if temperatures[i] > 0 and top_ps[i] < 1.0]
    for group in (plain, nucleus):
        if not group:
            continue
        idx = torch.tensor(group, device=logits.device)
        temp = torch.tensor([temperatures[i] for i in group], dtype=torch.float32, device=logits.device)
        u = torch.tensor([uniforms[i] for i in group], dtype=torch.float32, device=logits.device)
        scaled = logits[idx].float() / temp[:, None]
        if group is plain:
            out[idx] = _invert(torch.softmax(scaled, dim=-1), u)
            continue
        p = torch.tensor([top_ps[i] for i in group], dtype=torch.float32, device=logits.device)
        log_z = torch.logsumexp(scaled, dim=-1, keepdim=True)
        values, ids = torch.topk(scaled, min(TOP_CANDIDATES, vocab))
        probs = torch.exp(values - log_z)
        short = probs.sum(-1) < p if values.shape[1] < vocab else torch.zeros_like(p, dtype=torch.bool)
        if bool(short.any()):  # flat rows: their nucleus is bigger than the candidates
            full_values, full_ids = torch.sort(scaled[short], descending=True)
            out[idx[short]] = _pick(torch.exp(full_values - log_z[short]), full_ids, p[short], u[short])
            keep = ~short
            idx, probs, ids, p, u = idx[keep], probs[keep], ids[keep], p[keep], u[keep]
        if idx.numel():
            out[idx] = _pick(probs, ids, p, u)
    return out


def _pick(probs: torch.Tensor, ids: torch.Tensor, top_p: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """From probabilities sorted in descending order (with their token ids), draw within the nucleus."""
    kept = probs * ((torch.cumsum(probs, dim=-1) - probs) < top_p[:, None])
    return ids.gather(1, _invert(kept, u)[:, None])[:, 0]


def _invert(weights: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Per row, the index where the cumulative weight first exceeds ``u`` times the row's total."""
    cdf = torch.cumsum(weights, dim=-1)
    target = (u * cdf[:, -1])[:, None]
    return torch.searchsorted(cdf, target, right=True)[:, 0].clamp_(max=weights.shape[1] - 1)
