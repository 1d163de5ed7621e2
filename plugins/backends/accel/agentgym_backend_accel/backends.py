"""The ``cuda`` and ``npu`` backends: device strings, process-group backend, bf16, visible devices.

Both import torch (and ``torch_npu``) only when asked something, so listing plugins stays
cheap. Availability never raises: it returns ``(False, "one line why")`` for
:func:`agentgym_core.backend.resolve_backend` to turn into an error with a fix.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Optional

from agentgym_core import Backend, BackendUnavailableError, config_from

_DEVICE_LIST = re.compile(r"^\d+(,\d+)*$")


class _Unavailable(Exception):
    """Internal: carries the one-line reason a device module cannot be used."""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def check_devices(devices: Optional[str], key: str = "backend.devices") -> Optional[str]:
    """Validate a device-id list like ``"0,2,3"`` (None: leave the visible devices alone)."""
    if devices is None:
        return None
    text = str(devices).replace(" ", "")
    if not _DEVICE_LIST.match(text):
        raise ValueError(f"{key} must be a comma-separated list of device ids like '0,1', got {devices!r}")
    return text


@dataclass
class AccelConfig:
    #: Device ids to expose to this run, e.g. "0,1" (sets the backend's visible-devices env
    #: var in ``setup()``); None keeps whatever the environment already says.
    devices: Optional[str] = None

    def __post_init__(self) -> None:
        self.devices = check_devices(self.devices)


class _AccelBackend(Backend):
    """Shared logic: a torch device module (``torch.cuda`` / ``torch.npu``) and its env var."""

    #: Device-type prefix of device strings.
    device_type = ""
    #: Env var that restricts which devices a process sees.
    visible_var = ""
    #: How to fix an unavailable backend (completes the resolve error message).
    install_hint = ""

    Config = AccelConfig

    def __init__(self, **options: Any) -> None:
        self.config = config_from(self, options)
        self.devices = self.config.devices

    def _module(self) -> Any:
        """The torch device module; raises :class:`_Unavailable` with the reason."""
        raise NotImplementedError

    def device_count(self) -> int:
        try:
            module = self._module()
            return int(module.device_count()) if module.is_available() else 0
        except _Unavailable:
            return 0

    def _visible_note(self) -> str:
        value = os.environ.get(self.visible_var)
        return f"{self.visible_var}={value!r}" if value is not None else f"{self.visible_var} is unset"

    def is_available(self) -> tuple[bool, str]:
        try:
            module = self._module()
            if not module.is_available() or module.device_count() < 1:
                return False, f"no {self.name.upper()} device is visible ({self._visible_note()})"
        except _Unavailable as exc:
            return False, str(exc)
        except Exception as exc:  # noqa: BLE001 - a driver error is a reason, not a crash
            return False, f"{self.name} device query failed: {_first_line(exc)}"
        return True, ""

    def device(self, local_rank: int = 0) -> str:
        """``"<type>:<local_rank>"``; the rank must have a device of its own."""
        if local_rank < 0:
            raise ValueError(f"local_rank must be >= 0, got {local_rank}")
        ok, why = self.is_available()
        if not ok:
            raise BackendUnavailableError(f"backend {self.name!r}: {why}; {self.install_hint} or use backend: cpu")
        count = self.device_count()
        if local_rank >= count:
            raise BackendUnavailableError(
                f"backend {self.name!r}: local rank {local_rank} needs device {self.device_type}:{local_rank} but only "
                f"{count} device(s) are visible ({self._visible_note()}); start at most {count} processes per node"
            )
        return f"{self.device_type}:{local_rank}"

    def visible_devices_env(self) -> str | None:
        return self.visible_var

    def setup(self) -> None:
        """Expose ``devices`` through the visible-devices env var (before the device module starts)."""
        if self.devices is None:
            return
        current = os.environ.get(self.visible_var)
        if current is not None and current != self.devices and self._initialized():
            raise BackendUnavailableError(
                f"backend {self.name!r}: backend.devices={self.devices!r} but {self.visible_var}={current!r} and "
                f"the {self.name} runtime already started in this process; set {self.visible_var} before starting"
            )
        os.environ[self.visible_var] = self.devices

    def _initialized(self) -> bool:
        try:
            return bool(getattr(self._module(), "is_initialized", lambda: False)())
        except _Unavailable:
            return False


class CUDABackend(_AccelBackend):
    """NVIDIA GPUs: ``cuda:N`` per local rank, NCCL process groups, bf16 where the GPU has it."""

    name = "cuda"
    dist_backend = "nccl"
    device_type = "cuda"
    visible_var = "CUDA_VISIBLE_DEVICES"

    @property
    def install_hint(self) -> str:
        """What to do, by what is missing: a CUDA build of torch, or a device this build can see."""
        try:
            self._module()
        except _Unavailable:
            return ("install a CUDA build of torch (pip install torch==2.13.0 from PyPI on Linux, or from "
                    "https://download.pytorch.org/whl/cu128)")
        return "check that nvidia-smi lists a GPU (driver installed) and that CUDA_VISIBLE_DEVICES names it"

    def _module(self) -> Any:
        try:
            import torch
        except ImportError as exc:
            raise _Unavailable(f"torch cannot be imported: {_first_line(exc)}") from exc
        if getattr(torch.version, "cuda", None) is None:
            raise _Unavailable(f"torch {torch.__version__} is built without CUDA (torch.version.cuda is None)")
        return torch.cuda

    def supports_bf16(self) -> bool:
        try:
            module = self._module()
            return bool(module.is_available() and module.is_bf16_supported())
        except _Unavailable:
            return False


class NPUBackend(_AccelBackend):
    """Ascend NPUs through ``torch_npu``: ``npu:N`` per local rank, HCCL process groups.

    Not run on Ascend hardware in this project's CI; its logic is tested on CPU.
    """

    name = "npu"
    dist_backend = "hccl"
    device_type = "npu"
    visible_var = "ASCEND_RT_VISIBLE_DEVICES"

    @property
    def install_hint(self) -> str:
        """What to do, by what is missing: torch_npu, or a device it can see."""
        try:
            self._module()
        except _Unavailable:
            return "install torch_npu (matching your torch version and CANN toolkit)"
        return "check that npu-smi info lists an NPU (driver installed) and that ASCEND_RT_VISIBLE_DEVICES names it"

    def _module(self) -> Any:
        try:
            import torch
        except ImportError as exc:
            raise _Unavailable(f"torch cannot be imported: {_first_line(exc)}") from exc
        try:
            import torch_npu  # noqa: F401 - registers torch.npu
        except Exception as exc:  # noqa: BLE001 - missing CANN libraries raise OSError etc.
            raise _Unavailable(f"torch_npu cannot be imported: {_first_line(exc)}") from exc
        module = getattr(torch, "npu", None)
        if module is None:
            raise _Unavailable("torch_npu was imported but torch.npu is missing (torch/torch_npu version mismatch?)")
        return module

    def supports_bf16(self) -> bool:
        try:
            module = self._module()
        except _Unavailable:
            return False
        check = getattr(module, "is_bf16_supported", None)
        # Ascend 910B and later compute bf16 natively; older torch_npu lacks the query.
        return bool(check()) if check is not None else module.is_available()

    def setup(self) -> None:
        super().setup()
        ok, why = self.is_available()  # imports torch_npu so torch.npu exists for the trainer
        if not ok:
            raise BackendUnavailableError(f"backend 'npu': {why}; {self.install_hint} or use backend: cpu")
