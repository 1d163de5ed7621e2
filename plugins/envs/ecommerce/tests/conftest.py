"""A tiny random model folder for the tests that need a model (the train run, the model-played customer)."""
from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """A tiny random Llama with the bundled SmolLM2 tokenizer, saved as a model folder (the trainer tests' recipe)."""
    pytest.importorskip("torch")
    pytest.importorskip("agentgym_hf")
    from agentgym_hf.loading import load_tokenizer, tiny_random_model

    target = tmp_path_factory.mktemp("ecommerce-model") / "tiny-model"
    tok = load_tokenizer("smollm2-135m-instruct")
    model = tiny_random_model(tok, seed=3)
    model.save_pretrained(str(target))
    tok.save_pretrained(str(target))
    return target
