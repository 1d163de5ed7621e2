"""Fixtures: the SmolLM2 tokenizer (converted once from the bundled GGUF) and a tiny random model."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def hf_tokenizer():
    import torch
    from agentgym_hf.loading import load_tokenizer

    torch.set_num_threads(1)  # small shared test machines
    return load_tokenizer("smollm2-135m-instruct")


@pytest.fixture(scope="session")
def hf_tiny_model(hf_tokenizer):
    from agentgym_hf.loading import tiny_random_model

    return tiny_random_model(hf_tokenizer, seed=1)
