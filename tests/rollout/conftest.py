"""Fixtures for agent/rollout tests: the SmolLM2 tokenizer (converted once) and tiny random models."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def smol_tokenizer():
    import torch
    from agentgym_hf.loading import load_tokenizer

    torch.set_num_threads(1)  # the test machines are small and shared
    return load_tokenizer("smollm2-135m-instruct")


@pytest.fixture(scope="session")
def tiny_model(smol_tokenizer):
    from agentgym_hf.loading import tiny_random_model

    return tiny_random_model(smol_tokenizer, seed=0)
