"""A tiny random model with the bundled SmolLM2 tokenizer, the hf engine on it, and this plugin's manager."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def hf_engine(tmp_path_factory):
    """The hf engine on a tiny random Llama, fp32 (the update's log-probs are compared with the sampler's)."""
    pytest.importorskip("agentgym_engine_hf")
    import torch
    from agentgym_engine_hf.engine import HFEngine
    from agentgym_hf.testing import tiny_model_dir

    torch.set_num_threads(1)  # the test machines are small and shared
    engine = HFEngine(str(tiny_model_dir(tmp_path_factory.mktemp("external"))), dtype="fp32")
    yield engine
    engine.close()


@pytest.fixture
def manager(plugin_manager, register_plugin):
    """Core's defaults plus this plugin."""
    from agentgym_external import plugin

    register_plugin(plugin, name="external")
    return plugin_manager


@pytest.fixture(scope="session")
def smol(hf_engine):
    """The bundled SmolLM2 tokenizer (the tiny model's)."""
    return hf_engine.tokenizer
