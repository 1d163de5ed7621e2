"""The cuda/npu backends' logic on CPU (availability, device strings, env vars, auto order).

``torch_npu`` is stood in for by a small module on ``sys.path`` that does what the real one
does at import (attach ``torch.npu``); tests needing a real GPU are skipped with a reason.
"""
import os
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

from agentgym_backend_accel import plugin  # noqa: E402
from agentgym_backend_accel.backends import CUDABackend, NPUBackend  # noqa: E402
from agentgym_core.backend import BackendUnavailableError, probe_backends, resolve_backend  # noqa: E402
from agentgym_core.config import load_config  # noqa: E402
from agentgym_core.errors import ConfigError  # noqa: E402

HAS_CUDA = torch.cuda.is_available()
needs_gpu = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device (none on this machine)")
needs_no_gpu = pytest.mark.skipif(HAS_CUDA, reason="checks the no-GPU path; this machine has a CUDA device")

FAKE_NPU = """
import torch, types
torch.npu = types.SimpleNamespace(
    is_available=lambda: True, device_count=lambda: {count},
    is_bf16_supported=lambda: True, is_initialized=lambda: False)
"""


@pytest.fixture
def manager(plugin_manager, register_plugin):
    register_plugin(plugin, name="accel")
    return plugin_manager


@pytest.fixture
def torch_npu(tmp_path, monkeypatch):
    """Install a stand-in ``torch_npu`` with *count* devices (or one whose import fails)."""

    def install(count=2, fail=None):
        pkg = tmp_path / "torch_npu"
        pkg.mkdir(exist_ok=True)
        body = f"raise OSError({fail!r})" if fail else FAKE_NPU.format(count=count)
        (pkg / "__init__.py").write_text(textwrap.dedent(body))
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.delitem(sys.modules, "torch_npu", raising=False)

    yield install
    sys.modules.pop("torch_npu", None)
    if hasattr(torch, "npu"):
        delattr(torch, "npu")


def test_static_facts():
    cuda, npu = CUDABackend(), NPUBackend()
    assert (cuda.dist_backend, cuda.visible_devices_env()) == ("nccl", "CUDA_VISIBLE_DEVICES")
    assert (npu.dist_backend, npu.visible_devices_env()) == ("hccl", "ASCEND_RT_VISIBLE_DEVICES")


def _check_cuda_unavailable(manager, reason_start):
    ok, why = CUDABackend().is_available()
    assert not ok and why.startswith(reason_start) and "\n" not in why
    assert not CUDABackend().supports_bf16()
    assert CUDABackend().device_count() == 0
    with pytest.raises(BackendUnavailableError) as info:
        resolve_backend(manager, {"name": "cuda"})
    msg = str(info.value)
    assert msg.startswith(f"backend 'cuda' requested but {reason_start}") and msg.endswith("or use backend: cpu")
    assert "\n" not in msg


@needs_no_gpu
def test_cuda_unavailable_without_a_gpu_says_why(manager):
    """Either torch build on a machine without a GPU: a CPU build (download.pytorch.org/whl/cpu)
    is built without CUDA; a CUDA build (PyPI's default on Linux) finds no device."""
    if torch.version.cuda is None:
        _check_cuda_unavailable(manager, f"torch {torch.__version__} is built without CUDA")
    else:
        _check_cuda_unavailable(manager, "no CUDA device is visible (")


def test_cuda_unavailable_with_a_cpu_build_of_torch(manager, monkeypatch):
    monkeypatch.setattr(torch.version, "cuda", None)  # what a CPU build of torch reports
    _check_cuda_unavailable(manager, f"torch {torch.__version__} is built without CUDA (torch.version.cuda is None)")
    assert "install a CUDA build of torch" in CUDABackend().install_hint


def test_cuda_unavailable_with_a_cuda_build_and_no_device(manager, monkeypatch):
    # What a CUDA build of torch reports on a machine without an NVIDIA driver or device.
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    _check_cuda_unavailable(manager, "no CUDA device is visible (CUDA_VISIBLE_DEVICES is unset)")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    _check_cuda_unavailable(manager, "no CUDA device is visible (CUDA_VISIBLE_DEVICES='')")
    hint = CUDABackend().install_hint  # torch is fine: the device is what is missing
    assert "nvidia-smi" in hint and "install a CUDA build" not in hint


def test_npu_without_torch_npu_names_the_import_error(manager, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch_npu", None)  # makes `import torch_npu` fail
    with pytest.raises(BackendUnavailableError) as info:
        resolve_backend(manager, {"name": "npu"})
    msg = str(info.value)
    assert msg.startswith("backend 'npu' requested but torch_npu cannot be imported: ")
    assert "install torch_npu" in msg and msg.endswith("or use backend: cpu") and "\n" not in msg


def test_npu_import_failure_reason_is_one_line(torch_npu):
    torch_npu(fail="libhccl.so: cannot open shared object file\nmore detail")
    ok, why = NPUBackend().is_available()
    assert not ok
    assert why == "torch_npu cannot be imported: OSError: libhccl.so: cannot open shared object file"


def test_npu_devices_and_bf16_with_torch_npu(torch_npu, monkeypatch):
    torch_npu(count=2)
    monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", "4,5")
    npu = NPUBackend()
    assert npu.is_available() == (True, "")
    assert [npu.device(0), npu.device(1)] == ["npu:0", "npu:1"]
    assert npu.supports_bf16()
    with pytest.raises(BackendUnavailableError, match=r"local rank 2 .*\(ASCEND_RT_VISIBLE_DEVICES='4,5'\)"):
        npu.device(2)


def test_npu_with_zero_devices(torch_npu, monkeypatch):
    torch_npu(count=0)
    monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
    assert NPUBackend().is_available() == (False, "no NPU device is visible (ASCEND_RT_VISIBLE_DEVICES is unset)")


@needs_no_gpu
def test_auto_order_cuda_then_npu_then_cpu(manager, torch_npu):
    report = probe_backends(manager)
    assert [r[0] for r in report] == ["cuda", "npu", "cpu"]
    assert resolve_backend(manager, {"name": "auto"}).name == "cpu"
    torch_npu(count=1)
    assert resolve_backend(manager, {"name": "auto"}).name == "npu"
    assert resolve_backend(manager, None).device(0) == "npu:0"


def test_setup_sets_visible_devices(monkeypatch, torch_npu):
    torch_npu(count=2)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
    CUDABackend(devices="1, 3").setup()
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "1,3"
    NPUBackend(devices="0").setup()
    assert os.environ["ASCEND_RT_VISIBLE_DEVICES"] == "0"
    CUDABackend().setup()  # no devices: environment untouched
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "1,3"


def test_devices_config_validated(manager):
    with pytest.raises(ConfigError, match="backend.devices must be a comma-separated list"):
        load_config(None, ["backend.name=cuda", "backend.devices=gpu0"], manager=manager)
    cfg = load_config(None, ["backend.name=npu", "backend.devices='0,1'"], manager=manager)
    assert cfg.backend.devices == "0,1"


@needs_gpu
@pytest.mark.gpu
def test_cuda_on_a_real_gpu(manager):
    cuda = CUDABackend()
    assert cuda.is_available() == (True, "")
    assert cuda.device(0) == "cuda:0"
    assert cuda.supports_bf16() == torch.cuda.is_bf16_supported()
    assert resolve_backend(manager, {"name": "auto"}).name == "cuda"
    x = torch.ones(4, device=cuda.device(0), dtype=torch.bfloat16 if cuda.supports_bf16() else torch.float16)
    assert float((x * 2).sum()) == 8.0
