"""The SmolLM2 tokenizer (for scripted engines) and a tiny random model folder (for token-exact checks)."""
from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def smol_tokenizer():
    pytest.importorskip("agentgym_hf")
    import torch
    from agentgym_hf.loading import load_tokenizer

    torch.set_num_threads(1)  # the test machines are small and shared
    return load_tokenizer("smollm2-135m-instruct")


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory) -> Path:
    """A tiny random Llama with the bundled SmolLM2 tokenizer, saved like any model folder."""
    pytest.importorskip("agentgym_hf")
    from agentgym_hf.testing import tiny_model_dir

    return tiny_model_dir(tmp_path_factory.mktemp("strategies"))


@pytest.fixture
def manager(plugin_manager, register_plugin):
    """Core's defaults plus this plugin."""
    from agentgym_strategy_basic import plugin

    register_plugin(plugin, name="strategies")
    return plugin_manager
