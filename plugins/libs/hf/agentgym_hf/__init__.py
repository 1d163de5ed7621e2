"""``agentgym-hf``: the transformers code more than one AgentGym plugin needs, as a public API.

* :mod:`agentgym_hf.loading` -- ``load_model``, ``load_tokenizer``, ``prepare_tokenizer``,
  ``resolve_dtype``, ``peft_quiet``, ``tiny_random_model`` (tests);
* :mod:`agentgym_hf.convert` -- ``resolve_model_path``, ``resolve_tokenizer_path`` (bundled
  aliases converted once from GGUF);
* :mod:`agentgym_hf.kvcache` -- growable per-layer KV buffers (``SlabCache``) and helpers;
* :mod:`agentgym_hf.logprobs` -- ``token_logprobs``, ``lm_logits``: the LM head on chosen positions,
  in chunks (the rl update and the sft loss);
* :mod:`agentgym_hf.testing` -- ``tiny_model_dir``: a tiny random model folder for tests.

The hf engine and the rl trainer depend on this library, never on each other's modules.
Importing the package itself is cheap; the submodules import torch and transformers.
"""
from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "load_model": "loading", "load_tokenizer": "loading", "prepare_tokenizer": "loading",
    "resolve_dtype": "loading", "peft_quiet": "loading", "tiny_random_model": "loading",
    "resolve_model_path": "convert", "resolve_tokenizer_path": "convert", "tiny_model_dir": "testing",
    "token_logprobs": "logprobs", "lm_logits": "logprobs",
}

__all__ = ["lm_logits", "load_model", "load_tokenizer", "peft_quiet", "prepare_tokenizer", "resolve_dtype",
           "resolve_model_path", "resolve_tokenizer_path", "tiny_model_dir", "tiny_random_model", "token_logprobs"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agentgym_hf' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"agentgym_hf.{module}"), name)
