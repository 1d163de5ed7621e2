"""Fixtures for agent/rollout tests: the shared SmolLM2 tokenizer and a tiny random model of seed 0
(``hf_tokenizer`` comes from ``agentgym_hf.testing``)."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def smol_tokenizer(hf_tokenizer):
    return hf_tokenizer


@pytest.fixture(scope="session")
def tiny_model(hf_tokenizer):
    from agentgym_hf.loading import tiny_random_model

    return tiny_random_model(hf_tokenizer, seed=0)
