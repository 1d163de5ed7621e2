"""The one place a CPU run decides "native bf16": what /proc/cpuinfo says, or AGENTGYM_CPU_BF16 forced.

Everything that picks a numeric path on the CPU (``dtype: auto`` in the engines, the trainer's bf16
autocast) reads it, so forcing it here makes this machine take the other kind of CPU's path.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from agentgym_core.backend import CPU_BF16_ENV, cpu_bf16_reason, cpu_has_bf16_flags, cpu_supports_bf16
from agentgym_core.errors import AgentGymError


@pytest.mark.parametrize("value,native", [("1", True), ("true", True), ("0", False), ("off", False)])
def test_the_decision_can_be_forced_either_way(monkeypatch, value, native):
    monkeypatch.setenv(CPU_BF16_ENV, value)
    assert cpu_supports_bf16() is native
    assert cpu_bf16_reason() == f"{CPU_BF16_ENV}={value}"


def test_unset_it_follows_the_cpu_flags(monkeypatch):
    monkeypatch.delenv(CPU_BF16_ENV, raising=False)
    with open("/proc/cpuinfo") as f:
        flags = f.read()
    assert cpu_supports_bf16() is cpu_has_bf16_flags() is ("avx512_bf16" in flags or "amx_bf16" in flags)


def test_a_value_it_cannot_read_is_an_error_naming_the_fix(monkeypatch):
    monkeypatch.setenv(CPU_BF16_ENV, "maybe")
    with pytest.raises(AgentGymError, match=r"AGENTGYM_CPU_BF16='maybe' is not understood: set it to 1 .* or 0"):
        cpu_supports_bf16()


@pytest.mark.parametrize("native", [False, True])
def test_forcing_reaches_the_dtype_engines_resolve_and_the_cpu_backend(force_cpu_bf16, native):
    """In a fresh process (as the trainer's children see it): dtype auto and the cpu backend follow it."""
    pytest.importorskip("agentgym_hf")
    force_cpu_bf16(native)
    code = ("from agentgym_hf.loading import resolve_dtype; from agentgym_core.defaults.components import CPUBackend;"
            "print(resolve_dtype('auto', 'cpu'), CPUBackend().supports_bf16())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == (["torch.bfloat16", "True"] if native else ["torch.float32", "False"])
