"""Leaving a multi-process run: every process waits for the others, then the process group is destroyed.

Real processes under torch.distributed.run (gloo on loopback): when they all arrive, each exits 0
with nothing said; when one does not arrive in time, the ones waiting name it instead of hanging.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
if not torch.distributed.is_available():
    pytest.skip("torch.distributed is not available in this torch build", allow_module_level=True)

SCRIPT = textwrap.dedent("""
    import os, sys, time
    import torch.distributed as dist
    from agentgym_core.cli.train_cmd import end_process_group
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if rank == 1 and sys.argv[1] == "late":
        time.sleep(20)  # still busy when the others want to leave
    end_process_group(timeout=float(sys.argv[2]))
    assert not dist.is_initialized()
    print(f"rank {rank} left", flush=True)
""")


def _run(tmp_path, mode: str, timeout: float) -> subprocess.CompletedProcess:
    script = tmp_path / "leave.py"
    script.write_text(SCRIPT)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(script), mode,
           str(timeout)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=dict(os.environ, OMP_NUM_THREADS="1"))


@pytest.mark.slow
def test_processes_leave_together(tmp_path):
    proc = _run(tmp_path, "together", 120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "rank 0 left" in proc.stdout and "rank 1 left" in proc.stdout


@pytest.mark.slow
def test_a_process_that_does_not_come_is_named(tmp_path):
    proc = _run(tmp_path, "late", 3)
    assert "rank 0: waited 3 s at the end of training for the other processes" in proc.stderr, proc.stderr[-3000:]
    assert "1" in proc.stderr.split("waited 3 s", 1)[1].splitlines()[0]  # gloo names the missing rank
    assert "rank 0 left" in proc.stdout
