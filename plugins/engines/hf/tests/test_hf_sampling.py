"""The hf engine's sampler draws from the temperature-scaled, top-p-truncated distribution."""
from __future__ import annotations

import torch
from agentgym_engine_hf.engine import TOP_CANDIDATES, draw


def _nucleus(logits: torch.Tensor, temperature: float, top_p: float) -> torch.Tensor:
    """Reference: sort everything, keep the smallest top set whose mass reaches top_p, renormalise."""
    probs = torch.softmax(logits.double() / temperature, dim=-1)
    sorted_p, order = torch.sort(probs, descending=True)
    keep = (torch.cumsum(sorted_p, dim=-1) - sorted_p) < top_p
    out = torch.zeros_like(probs)
    out[order[keep]] = sorted_p[keep]
    return out / out.sum()


def _empirical(logits, temperature, top_p, n, seed=0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    counts = torch.zeros(logits.shape[0], dtype=torch.float64)
    for _ in range(n):
        counts[draw(logits, temperature, top_p, gen)] += 1
    return counts / n


def test_peaked_distribution_matches_the_nucleus_and_never_leaves_it():
    torch.manual_seed(0)
    logits = torch.randn(1000) * 3  # peaked: the nucleus sits inside the top candidates
    ref = _nucleus(logits, 0.7, 0.9)
    assert int((ref > 0).sum()) < TOP_CANDIDATES
    emp = _empirical(logits, 0.7, 0.9, 8000)
    assert float(emp[ref == 0].sum()) == 0.0
    assert 0.5 * float((emp - ref).abs().sum()) < 0.06


def test_flat_distribution_falls_back_to_the_full_sort():
    torch.manual_seed(1)
    logits = torch.randn(2000) * 0.1  # nearly uniform: the 0.8 nucleus holds ~1,600 tokens
    ref = _nucleus(logits, 1.0, 0.8)
    assert int((ref > 0).sum()) > TOP_CANDIDATES
    emp = _empirical(logits, 1.0, 0.8, 4000)
    assert float(emp[ref == 0].sum()) == 0.0
    inside = ref > 0
    assert int((emp[inside] > 0).sum()) > 1000  # spread over the nucleus


def test_no_truncation_samples_the_whole_softmax():
    torch.manual_seed(2)
    logits = torch.randn(40)
    emp = _empirical(logits, 1.0, 1.0, 8000)
    ref = torch.softmax(logits.double(), dim=-1)
    assert 0.5 * float((emp - ref).abs().sum()) < 0.05


def test_same_seed_same_tokens():
    logits = torch.randn(500)
    a = [draw(logits, 0.8, 0.95, g) for g in [torch.Generator().manual_seed(7)] for _ in range(50)]
    b = [draw(logits, 0.8, 0.95, g) for g in [torch.Generator().manual_seed(7)] for _ in range(50)]
    assert a == b and len(set(a)) > 1
