"""The SmolLM2 tokenizer (for scripted engines) and a tiny random model folder (for token-exact checks)."""
from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def smol_tokenizer(request):
    """The shared SmolLM2 tokenizer (``agentgym_hf.testing``; skipped without agentgym-hf)."""
    pytest.importorskip("agentgym_hf")
    return request.getfixturevalue("hf_tokenizer")


@pytest.fixture(scope="session")
def model_dir(request) -> Path:
    """A tiny random Llama with the bundled SmolLM2 tokenizer, saved like any model folder."""
    pytest.importorskip("agentgym_hf")
    return request.getfixturevalue("hf_tiny_model_dir")


@pytest.fixture
def manager(plugin_manager, register_plugin):
    """Core's defaults plus this plugin."""
    from agentgym_strategy_basic import plugin

    register_plugin(plugin, name="strategies")
    return plugin_manager
