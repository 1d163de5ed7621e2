"""resolve_backend with core alone: cpu, auto falls back to cpu, unknown names are explained."""
import pytest

from agentgym_core.backend import probe_backends, resolve_backend
from agentgym_core.errors import UnknownNameError


def test_cpu_and_auto_without_accelerator_plugins(plugin_manager):
    assert resolve_backend(plugin_manager, {"name": "cpu"}).device(0) == "cpu"
    assert resolve_backend(plugin_manager, "auto").name == "cpu"
    assert resolve_backend(plugin_manager, None).name == "cpu"
    report = {name: (ok, why) for name, ok, why in probe_backends(plugin_manager)}
    assert report["cuda"] == (False, "not installed (its plugin is missing)")
    assert report["cpu"] == (True, "")


def test_unknown_backend_names_the_distribution(plugin_manager):
    with pytest.raises(UnknownNameError, match="agentgym-backend-accel"):
        resolve_backend(plugin_manager, {"name": "npu"})
