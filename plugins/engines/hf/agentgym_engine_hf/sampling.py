"""Batched token sampling: temperature, top-p, one uniform draw per row from the row's own generator.

Every row of a batch is sampled by a handful of tensor ops on the whole batch (one host sync
per decode step, not several per row), and a row's token depends only on its own logits and
uniform draw, so a request samples the same tokens alone or in any batch.

:func:`sample_fixed` and :func:`counter_uniforms` are the same sampler for the static decode
mode: fixed shapes, no host sync, and each row's uniform draw a hash of (its seed, its token
index), so a CUDA graph can replay it and a row samples the same tokens in any batch.
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


#: Sampling modes of a fixed-shape step, cheapest first: which rows may need what is known on
#: the host (from the requests), so a step only computes what its rows can use.
MODES = ("greedy", "plain", "nucleus")


def mode_of(temperatures: Sequence[float], top_ps: Sequence[float]) -> str:
    """The cheapest :data:`MODES` entry that samples every row right."""
    if all(t <= 0 for t in temperatures):
        return "greedy"
    return "nucleus" if any(t > 0 and p < 1.0 for t, p in zip(temperatures, top_ps)) else "plain"


def sample_fixed(logits: torch.Tensor, temperature: torch.Tensor, top_p: torch.Tensor, u: torch.Tensor,
                 mode: str, *, may_sync: bool = False) -> torch.Tensor:
    """:func:`sample_tokens` as fixed-shape tensor ops: argmax where ``temperature <= 0``, else an
    inverse-CDF draw at ``u`` from the temperature-scaled softmax, truncated to the top-``top_p``
    nucleus where ``top_p < 1`` (looked for among :data:`TOP_CANDIDATES` first; a row whose
    nucleus is wider takes the full sort). *may_sync*: the caller is not capturing a graph, so
    the full sort may be skipped when no row needs it (same tokens, less work).
    """
    greedy = torch.argmax(logits, dim=-1)
    if mode == "greedy":
        return greedy
    temp = torch.where(temperature > 0, temperature, torch.ones_like(temperature))
    scaled = logits / temp[:, None]
    out = _invert(torch.softmax(scaled, dim=-1), u)
    if mode == "nucleus":
        vocab = scaled.shape[1]
        log_z = torch.logsumexp(scaled, dim=-1, keepdim=True)
        values, ids = torch.topk(scaled, min(TOP_CANDIDATES, vocab))
        probs = torch.exp(values - log_z)
        nucleus = _pick(probs, ids, top_p, u)
        if values.shape[1] < vocab:
            short = (probs.sum(-1) < top_p) & (top_p < 1.0) & (temperature > 0)
            if not may_sync:  # fixed shapes: every row sorted, the short ones take it
                full_values, full_ids = torch.sort(scaled, descending=True)
                nucleus = torch.where(short, _pick(torch.exp(full_values - log_z), full_ids, top_p, u), nucleus)
            elif bool(short.any()):  # only the short rows sorted (a 49k sort costs ~10 ms a row on a CPU)
                rows = short.nonzero()[:, 0]
                full_values, full_ids = torch.sort(scaled[rows], descending=True)
                nucleus[rows] = _pick(torch.exp(full_values - log_z[rows]), full_ids, top_p[rows], u[rows])
        out = torch.where(top_p < 1.0, nucleus, out)
    return torch.where(temperature > 0, out, greedy)


_M32 = 0xFFFFFFFF


def _mul32(x: torch.Tensor, c: int) -> torch.Tensor:
    """``x * c mod 2**32`` for ``0 <= x < 2**32`` in int64 without overflowing (16-bit halves)."""
    return ((x & 0xFFFF) * c + (((x >> 16) * c) & 0xFFFF) * 65536) & _M32


def _mix32(x: torch.Tensor) -> torch.Tensor:
    """A 32-bit integer hash (Wellons' lowbias32) on int64 tensors holding values in [0, 2**32)."""
    x = x ^ (x >> 16)
    x = _mul32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = _mul32(x, 0x846CA68B)
    return x ^ (x >> 16)


def seed_words(seed: int) -> tuple[int, int]:
    """A 63-bit seed as the two 32-bit words :func:`counter_uniforms` takes."""
    seed = int(seed) % (2**63)
    return seed & _M32, seed >> 32


def counter_uniforms(seed_lo: torch.Tensor, seed_hi: torch.Tensor, counter: torch.Tensor) -> torch.Tensor:
    """One float32 uniform in [0, 1) per row: a hash of (the row's seed, its token index *counter*).

    Integer tensor ops only (no generator, no host sync), so a draw depends on nothing but its
    row's seed and position: the same in any batch, on any device, under a CUDA graph.
    """
    h = _mix32(seed_lo ^ _mix32((seed_hi + 0x9E3779B9) & _M32))
    h = _mix32(h ^ _mix32((counter * 2 + 1) & _M32))
    return (h >> 8).to(torch.float32) * (1.0 / (1 << 24))
