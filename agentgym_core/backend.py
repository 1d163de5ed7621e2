"""Pick the device backend a run uses: ``backend: auto | cpu | cuda | npu | <plugin name>``.

``auto`` takes the first available of ``cuda`` then ``npu`` (when their plugin is installed)
and falls back to ``cpu``. A backend asked for by name that cannot run here is an error that
says why in one line and how to fix it. Nothing here imports torch; the backends do, lazily.
"""
from __future__ import annotations

import functools
import os
from typing import Any

from .catalogue import AUTO_BACKENDS
from .errors import AgentGymError

#: The order ``auto`` tries accelerators in before falling back to ``cpu`` (the plugin catalogue's).
AUTO_ORDER = AUTO_BACKENDS


class BackendUnavailableError(AgentGymError):
    """The configured backend cannot run on this machine (no device, vendor module missing)."""


#: Set to ``1`` or ``0`` to force what a CPU run decides on "native bf16" (``dtype: auto``, the
#: trainer's bf16 autocast), whatever this CPU has: to reproduce the other kind of machine here.
CPU_BF16_ENV = "AGENTGYM_CPU_BF16"

_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def cpu_supports_bf16() -> bool:
    """True when the CPU computes bf16 natively (AVX512-BF16 or AMX); elsewhere bf16 is slower than fp32.

    The one answer for the ``cpu`` backend, the engines' ``dtype: auto`` and the trainer. The
    environment variable ``AGENTGYM_CPU_BF16`` (``1`` / ``0``) overrides what ``/proc/cpuinfo`` says.
    """
    forced = os.environ.get(CPU_BF16_ENV, "").strip().lower()
    if forced in _TRUE:
        return True
    if forced in _FALSE:
        return False
    if forced:
        raise AgentGymError(f"{CPU_BF16_ENV}={os.environ[CPU_BF16_ENV]!r} is not understood: set it to 1 (act as a "
                            "CPU with native bf16) or 0 (act as one without), or unset it to detect this CPU's")
    return cpu_has_bf16_flags()


@functools.lru_cache(maxsize=1)
def cpu_has_bf16_flags() -> bool:
    """What ``/proc/cpuinfo`` says: ``avx512_bf16`` or ``amx_bf16`` among the CPU flags."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def cpu_bf16_reason() -> str:
    """One line saying what decided :func:`cpu_supports_bf16` (for logs and test headers)."""
    forced = os.environ.get(CPU_BF16_ENV, "").strip()
    if forced:
        return f"{CPU_BF16_ENV}={forced}"
    return "avx512_bf16/amx_bf16 in /proc/cpuinfo" if cpu_has_bf16_flags() else "no avx512_bf16/amx_bf16 in /proc/cpuinfo"


def _section_name(backend_cfg: Any) -> str:
    if backend_cfg is None:
        return "auto"
    if isinstance(backend_cfg, str):
        return backend_cfg
    return str(backend_cfg.get("name") or "auto")


def probe_backends(manager: Any) -> list[tuple[str, bool, str]]:
    """``(name, available, why_not)`` for each backend ``auto`` would try, in order, then ``cpu``."""
    registry = manager.registry("backends")
    report = []
    for name in (*AUTO_ORDER, "cpu"):
        if name not in registry:
            report.append((name, False, "not installed (its plugin is missing)"))
            continue
        try:
            ok, why = registry.build(name).is_available()
        except AgentGymError as exc:
            ok, why = False, str(exc)
        report.append((name, ok, why))
    return report


def resolve_backend(manager: Any, backend_cfg: Any = None) -> Any:
    """Build the backend that *backend_cfg* (the run config's ``backend`` section) selects.

    :raises BackendUnavailableError: a backend requested by name is not usable here.
    """
    from .config import build_component

    name = _section_name(backend_cfg)
    registry = manager.registry("backends")
    if name == "auto":
        for candidate, ok, _ in probe_backends(manager):
            if ok:
                return registry.build(candidate)
        raise BackendUnavailableError("backend 'auto' found no usable backend, not even 'cpu'; check `agentgym plugins`")
    section = {"name": name} if isinstance(backend_cfg, str) else backend_cfg
    backend = build_component(manager, "backends", section)
    ok, why = backend.is_available()
    if not ok:
        hint = getattr(backend, "install_hint", "") or "fix the device setup"
        raise BackendUnavailableError(f"backend {name!r} requested but {why}; {hint} or use backend: cpu")
    return backend
