"""The static decode mode's sampler: the plain sampler's tokens from fixed-shape ops, and uniform
draws that are a pure function of (seed, token index)."""
from __future__ import annotations

import random

import pytest
import torch
from agentgym_engine_hf.sampling import _mul32, counter_uniforms, mode_of, sample_fixed, sample_tokens, seed_words


@pytest.mark.parametrize("may_sync", [True, False])
def test_fixed_shape_sampler_draws_the_plain_samplers_tokens(may_sync):
    torch.manual_seed(0)
    # peaked rows (nucleus among the top candidates), flat rows (nucleus needs the full sort), greedy rows
    logits = torch.cat([torch.randn(6, 3000) * 4, torch.randn(4, 3000) * 0.05])
    temps = [0.7, 1.0, 0.0, 1.3, 1.0, 0.9, 1.0, 0.8, 0.0, 1.0]
    top_ps = [0.9, 1.0, 0.5, 0.95, 0.3, 1.0, 0.8, 1.0, 1.0, 0.99]
    for trial in range(5):
        us = torch.rand(10, generator=torch.Generator().manual_seed(trial))
        want = sample_tokens(logits, temps, top_ps, us.tolist())
        got = sample_fixed(logits, torch.tensor(temps), torch.tensor(top_ps), us, mode_of(temps, top_ps), may_sync=may_sync)
        assert got.tolist() == want.tolist()
    greedy = sample_fixed(logits, torch.zeros(10), torch.ones(10), us, "greedy")
    assert greedy.tolist() == logits.argmax(-1).tolist()
    assert mode_of([0.0, 0.0], [0.5, 1.0]) == "greedy" and mode_of([1.0, 0.0], [1.0, 0.5]) == "plain"
    assert mode_of([1.0, 0.7], [1.0, 0.9]) == "nucleus"


def test_uniforms_depend_only_on_seed_and_index():
    seeds = [0, 1, 2**40 + 7, 2**63 - 1, 123456789]
    words = [seed_words(s) for s in seeds]
    lo, hi = torch.tensor([w[0] for w in words]), torch.tensor([w[1] for w in words])
    counts = torch.tensor([0, 5, 5, 9, 1000])
    u = counter_uniforms(lo, hi, counts)
    assert u.dtype == torch.float32 and bool(((u >= 0) & (u < 1)).all())
    for i in range(5):  # alone, or in another order, a row draws the same
        assert float(counter_uniforms(lo[i : i + 1], hi[i : i + 1], counts[i : i + 1])) == float(u[i])
    many = counter_uniforms(torch.full((20000,), words[2][0]), torch.full((20000,), words[2][1]), torch.arange(20000))
    hist = torch.histc(many, bins=10, min=0, max=1) / 20000
    assert float((hist - 0.1).abs().max()) < 0.01  # uniform enough
    other = counter_uniforms(torch.full((20000,), words[4][0]), torch.full((20000,), words[4][1]), torch.arange(20000))
    assert abs(float(torch.corrcoef(torch.stack([many, other]))[0, 1])) < 0.03  # seeds give unrelated streams


def test_32_bit_multiply_wraps_like_unsigned_ints():
    rng = random.Random(0)
    xs = [rng.getrandbits(32) for _ in range(1000)] + [0, 1, 2**32 - 1]
    for c in (0x7FEB352D, 0x846CA68B):
        assert _mul32(torch.tensor(xs), c).tolist() == [(x * c) % 2**32 for x in xs]
