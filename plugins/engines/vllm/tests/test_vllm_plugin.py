"""Runs everywhere: the plugin registers without importing vllm, and a missing vllm gives the fix."""
from __future__ import annotations

import importlib.util
import sys

import pytest


def test_registers_engine_without_importing_vllm(plugin_manager, register_plugin):
    from agentgym_engine_vllm import plugin

    register_plugin(plugin, name="vllm-engine")
    entry = plugin_manager.registry("engines").get("vllm")
    assert entry is not None
    assert "vllm" not in sys.modules or importlib.util.find_spec("vllm") is not None


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_missing_vllm_error_says_how_to_fix():
    from agentgym_engine_vllm.engine import VLLMEngine, VLLMUnavailableError

    with pytest.raises(VLLMUnavailableError, match=r"pip install -e 'plugins/engines/vllm\[vllm\]'"):
        VLLMEngine("smollm2-135m-instruct")
