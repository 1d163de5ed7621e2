"""Fixtures for the vllm engine tests: SmolLM2-135M-Instruct served by vLLM and by the hf engine.

Nothing here imports vllm or torch at load time: without vllm these tests skip (importorskip
in each module) and the rest of the suite is unaffected. ``scripts/test-vllm.sh`` runs them.
"""
from __future__ import annotations

import os

import pytest

# A small KV cache on a CPU (GiB; vLLM's CPU default is a share of RAM). GPUs ignore it.
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")


@pytest.fixture(scope="session")
def smol_folder():
    import torch
    from agentgym_hf.convert import resolve_model_path

    torch.set_num_threads(1)  # small shared test machines
    return str(resolve_model_path("smollm2-135m-instruct"))


@pytest.fixture(scope="session")
def vllm_engine(smol_folder):
    """vLLM as users get it: engine core and worker in their own processes, eager mode, fp32."""
    from agentgym_engine_vllm.engine import VLLMEngine

    engine = VLLMEngine(smol_folder, dtype="fp32", enforce_eager=True, max_context=4096)
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def hf_engine(smol_folder):
    from agentgym_engine_hf.engine import HFEngine

    engine = HFEngine(smol_folder, dtype="fp32", threads=1)
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def tiny_folder(tmp_path_factory):
    """A tiny random Llama with the SmolLM2 tokenizer, saved as a model folder. Head size 32:
    vLLM's CPU attention takes 32, 64, 80, ... (not the 16 of the other plugins' tiny models)."""
    from agentgym_hf.loading import load_tokenizer, tiny_random_model

    tokenizer = load_tokenizer("smollm2-135m-instruct")
    folder = tmp_path_factory.mktemp("tiny-llama")
    model = tiny_random_model(tokenizer, seed=5, hidden_size=128, intermediate_size=256, num_attention_heads=4,
                              num_key_value_heads=2)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="session")
def base_weights(smol_folder):
    """The served model's weights as a state dict under the checkpoint's names (a tied lm_head included)."""
    from safetensors.torch import load_file

    state = load_file(os.path.join(smol_folder, "model.safetensors"))
    state.setdefault("lm_head.weight", state["model.embed_tokens.weight"])
    return state


@pytest.fixture(scope="session")
def perturb():
    """``perturb(state, seed)``: *state* with Gaussian noise on every matrix, the tied embedding
    (and so lm_head) included, under the same names."""
    import torch

    def perturb(state, seed=0, scale=0.03):
        g = torch.Generator().manual_seed(seed)
        out = {k: v + scale * torch.randn(v.shape, generator=g) if v.ndim == 2 else v.clone()
               for k, v in state.items() if k != "lm_head.weight"}
        if "lm_head.weight" in state:
            out["lm_head.weight"] = out["model.embed_tokens.weight"]
        return out

    return perturb
