"""Hooks only: registers the ``cuda`` and ``npu`` backends (torch is imported only when used)."""
from agentgym_core import hookimpl


@hookimpl
def register_backends(registry):
    registry.add("cuda", "agentgym_backend_accel.backends:CUDABackend",
                 description="NVIDIA GPUs: device cuda:N, NCCL process groups, bf16 where supported")
    registry.add("npu", "agentgym_backend_accel.backends:NPUBackend",
                 description="Ascend NPUs via torch_npu: device npu:N, HCCL process groups")
