"""The vllm engine against the shared engine contract. Skips (with the reason) without vllm or a GPU."""
from __future__ import annotations

import pytest

from agentgym_core.rollout import engine_checks

vllm = pytest.importorskip("vllm", reason="vllm is not installed (it needs a CUDA GPU); the vllm engine is untested here")


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _has_cuda(), reason="vllm engine tests need a CUDA GPU")]


@pytest.fixture(scope="module")
def vllm_engine(tmp_path_factory):
    from agentgym_hf.loading import load_tokenizer, tiny_random_model
    from agentgym_engine_vllm.engine import VLLMEngine

    tokenizer = load_tokenizer("smollm2-135m-instruct")
    folder = tmp_path_factory.mktemp("tiny")
    tiny_random_model(tokenizer, hidden_size=64, num_attention_heads=4, num_key_value_heads=2).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    engine = VLLMEngine(str(folder), dtype="fp32", gpu_memory_utilization=0.2, enforce_eager=True)
    yield engine
    engine.close()


@pytest.mark.parametrize("check", engine_checks.ALL_CHECKS, ids=lambda c: c.__name__)
def test_engine_contract(check, vllm_engine):
    check(vllm_engine)


def test_plugin_module_imports_without_vllm_side_effects():
    import agentgym_engine_vllm.plugin  # noqa: F401
