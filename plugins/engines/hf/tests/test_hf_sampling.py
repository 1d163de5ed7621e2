"""The hf engine's sampler draws from the temperature-scaled, top-p-truncated distribution."""
from __future__ import annotations

import torch
from agentgym_engine_hf.sampling import TOP_CANDIDATES, sample_tokens


def _nucleus(logits: torch.Tensor, temperature: float, top_p: float) -> torch.Tensor:
    """Reference: sort everything, keep the smallest top set whose mass reaches top_p, renormalise."""
    probs = torch.softmax(logits.double() / temperature, dim=-1)
    sorted_p, order = torch.sort(probs, descending=True)
    keep = (torch.cumsum(sorted_p, dim=-1) - sorted_p) < top_p
    out = torch.zeros_like(probs)
    out[order[keep]] = sorted_p[keep]
    return out / out.sum()


def _empirical(logits, temperature, top_p, n, seed=0) -> torch.Tensor:
    """Sample *n* tokens as one batch of *n* identical rows with their own uniform draws."""
    gen = torch.Generator().manual_seed(seed)
    uniforms = torch.rand(n, generator=gen).tolist()
    tokens = sample_tokens(logits.expand(n, -1), [temperature] * n, [top_p] * n, uniforms)
    return torch.bincount(tokens, minlength=logits.shape[0]).double() / n


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


def test_a_row_samples_the_same_token_alone_or_in_a_mixed_batch():
    torch.manual_seed(3)
    logits = torch.cat([torch.randn(3, 1000) * 3, torch.randn(1, 1000) * 0.1])  # peaked rows and a flat one
    temps, top_ps, us = [0.7, 0.0, 1.0, 1.0], [0.9, 0.9, 1.0, 0.8], [0.31, 0.5, 0.77, 0.42]
    batch = sample_tokens(logits, temps, top_ps, us).tolist()
    alone = [int(sample_tokens(logits[i : i + 1], temps[i : i + 1], top_ps[i : i + 1], us[i : i + 1])) for i in range(4)]
    assert batch == alone
    assert batch[1] == int(torch.argmax(logits[1]))  # temperature 0 is greedy


def test_uniform_draw_inverts_the_cdf():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.2]]))
    assert [int(sample_tokens(logits, [1.0], [1.0], [u])) for u in (0.0, 0.49, 0.51, 0.79, 0.81, 0.999)] == [0, 0, 1, 1, 2, 2]
    # top_p 0.6 keeps {0, 1} (mass before token 1 is 0.5 < 0.6), renormalised to 0.625 / 0.375
    assert [int(sample_tokens(logits, [1.0], [0.6], [u])) for u in (0.6, 0.65, 0.999)] == [0, 1, 1]
