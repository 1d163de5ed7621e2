"""Hugging Face Hub ids (``org/name``, ``org/name@revision``) as local folders, through ``huggingface_hub``.

A hub id resolves to the snapshot folder of the standard Hugging Face cache
(``<cache>/models--org--name/snapshots/<commit>``, the commit read from ``refs/<revision>`` unless
the revision is a commit hash), found without the network first. The cache is ``$HF_HUB_CACHE``,
else ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub`` (read at each call, as huggingface_hub
reads them at import). A model that is not there is downloaded into it unless ``HF_HUB_OFFLINE``
(or ``TRANSFORMERS_OFFLINE``) is set; then, or when the download fails, the error names every
place that was tried.
"""
from __future__ import annotations

import os
from pathlib import Path

from agentgym_core.models import BUNDLED, ModelNotFoundError, split_revision

#: Files a download skips: other formats of the same weights (safetensors and the configs are what loads).
IGNORED = ["*.gguf", "*.onnx", "*.onnx_data", "*.h5", "*.msgpack", "*.ot", "*.tflite", "*.mlmodel", "original/*",
           "*.pth"]


def hub_cache_dir() -> Path:
    """The Hugging Face cache, with huggingface_hub's precedence of environment variables."""
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "huggingface")
    hub = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE") or os.path.join(home, "hub")
    return Path(os.path.expandvars(os.path.expanduser(hub)))


def is_offline() -> bool:
    """``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) set to a true value: never reach the Hub."""
    value = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    return value.upper() in {"1", "ON", "YES", "TRUE"}


def hub_model_dir(name: str) -> Path:
    """The local snapshot folder of hub id *name* (``org/name`` or ``org/name@revision``); see the module."""
    from huggingface_hub import snapshot_download

    repo, revision = split_revision(name)
    cache = hub_cache_dir()
    try:
        return Path(snapshot_download(repo, revision=revision, cache_dir=str(cache), local_files_only=True))
    except Exception as exc:  # noqa: BLE001 - not cached (or cached incompletely): say what was tried
        cached = exc
    if is_offline():
        raise ModelNotFoundError(_not_found(name, cache, cached, "HF_HUB_OFFLINE is set, so nothing was downloaded"))
    try:
        folder = snapshot_download(repo, revision=revision, cache_dir=str(cache), ignore_patterns=IGNORED)
    except Exception as exc:  # noqa: BLE001 - offline, unknown repo, gated, ...
        raise ModelNotFoundError(_not_found(name, cache, cached, f"downloading it failed: {type(exc).__name__}: "
                                            f"{' '.join(str(exc).split())[:300]}")) from None
    return Path(folder)


#: Hub organisations of common model families, to complete a bare name ("Qwen2.5-7B" -> "Qwen/Qwen2.5-7B").
FAMILY_ORGS = {"qwen": "Qwen", "llama": "meta-llama", "smollm": "HuggingFaceTB", "mistral": "mistralai",
               "phi": "microsoft", "gemma": "google", "deepseek": "deepseek-ai", "olmo": "allenai"}


def hub_ids_like(name: str, cache: Path) -> list[str]:
    """Hub ids *name* may mean when it lacks its ``org/``: those in *cache* with that name (any case),
    else the organisation of its model family."""
    repo, _ = split_revision(name)
    if "/" in repo:
        return []
    cached = sorted(p.name[len("models--"):].replace("--", "/", 1) for p in cache.glob("models--*--*")
                    if p.name.lower().endswith(f"--{repo.lower()}"))
    if cached:
        return cached
    org = next((o for family, o in FAMILY_ORGS.items() if repo.lower().startswith(family)), None)
    return [f"{org}/{repo}"] if org else []


def _not_found(name: str, cache: Path, cached: Exception, download: str) -> str:
    """One line that leads with what to do: the hub id meant, the command that caches it, the bundled model;
    then what was tried."""
    repo, revision = split_revision(name)
    like = hub_ids_like(name, cache)
    meant = like[0] if like else repo
    alias = next(iter(BUNDLED))
    hint = (f" A hub id is org/name: did you mean {' or '.join(repr(i) for i in like)}?" if like else
            " A hub id is org/name (e.g. Qwen/Qwen2.5-0.5B-Instruct)." if "/" not in repo else "")
    folder = cache / f"models--{repo.replace('/', '--')}"
    where = (f"{folder}/snapshots/<commit of refs/{revision or 'main'}>" if not _is_commit(revision)
             else f"{folder}/snapshots/{revision}")
    return (f"model {name!r} was not found.{hint} Cache it once where the Hub is reachable: "
            f"`hf download {meant}{f' --revision {revision}' if revision else ''}`, or use the bundled model "
            f"{alias!r} (model.path={alias}, LLMAgent(base_model={alias!r})). Tried: a bundled alias "
            f"({', '.join(BUNDLED)}): no; a local folder {name!r}: none here; the Hugging Face cache ($HF_HUB_CACHE "
            f"or $HF_HOME/hub): {where}: {type(cached).__name__}; {download}; HF_HUB_CACHE may point at a cache "
            f"that holds it, or model.path at a model folder")


def _is_commit(revision: str | None) -> bool:
    return revision is not None and len(revision) == 40 and all(c in "0123456789abcdef" for c in revision)
