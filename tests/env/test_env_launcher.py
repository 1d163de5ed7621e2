"""The launcher starts real `agentgym env serve` processes and leaves none behind, whatever happens."""
from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from agentgym_core.env.client import HTTPEnvPool
from agentgym_core.env.errors import EnvLaunchError
from agentgym_core.env.launcher import EnvLauncher, open_env_pool
from agentgym_core.env.pool import LocalEnvPool

TOY = "agentgym_env_toys:CounterEnv"
pytestmark = pytest.mark.slow


def gone(pid: int) -> bool:
    """True when *pid* no longer runs (a zombie awaiting its reaper counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return True
    return state in ("Z", "X")


def wait_gone(pids: list[int], within: float = 15.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if all(gone(p) for p in pids):
            return True
        time.sleep(0.1)
    return False


async def play(pool) -> tuple[str, float, bool, dict]:
    sid = await pool.create()
    await pool.reset(sid, 0)
    return await pool.step(sid, "inc", seq=1)


def test_launcher_serves_and_stops_its_processes_even_after_an_error():
    with EnvLauncher(TOY, servers=2, token="tok", options={"start": 0}) as launcher:
        pids = [p.pid for p in launcher.procs]
        assert len(set(launcher.urls)) == 2 and all(u.startswith("http://127.0.0.1:") for u in launcher.urls)
        pool = HTTPEnvPool(launcher.urls, token="tok")
        assert asyncio.run(play(pool))[2] is True
    assert wait_gone(pids)

    with pytest.raises(RuntimeError, match="user code failed"):
        with EnvLauncher(TOY, servers=1) as launcher:
            pids = [p.pid for p in launcher.procs]
            raise RuntimeError("user code failed")
    assert wait_gone(pids)


def test_server_that_cannot_start_reports_its_stderr():
    with pytest.raises(EnvLaunchError) as caught:
        EnvLauncher("agentgym_env_toys:BrokenEnv", servers=1, startup_timeout=60).start()
    message = str(caught.value)
    assert "exited with code" in message and "missing game files" in message


def _sigint_as_in_a_terminal() -> None:
    """The child gets Ctrl-C as a terminal delivers it, even if the test process ignores SIGINT
    (an ignored signal is inherited across exec, and Python then installs no KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_and_sigkill_of_the_launching_process_leave_no_server():
    script = textwrap.dedent(f"""
        import sys, time
        from agentgym_core.env.launcher import EnvLauncher
        with EnvLauncher({TOY!r}, servers=2) as launcher:
            print(" ".join(str(p.pid) for p in launcher.procs), flush=True)
            time.sleep(120)
    """)
    for sig in (signal.SIGINT, signal.SIGKILL):
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=_sigint_as_in_a_terminal)
        try:
            line = proc.stdout.readline()
            assert line.strip(), proc.stderr.read()
            pids = [int(p) for p in line.split()]
            assert not any(gone(p) for p in pids)
            proc.send_signal(sig)
            proc.wait(timeout=30)
            # SIGINT: the launcher stops them; SIGKILL: each server notices its parent is gone
            assert wait_gone(pids), f"server processes left after {sig.name}"
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()


def test_open_env_pool_local_remote_and_launched(plugin_manager):
    local = open_env_pool({"name": TOY, "start": 0}, plugin_manager, local=True)
    assert isinstance(local, LocalEnvPool)
    assert asyncio.run(play(local))[2] is True

    async def launched():
        async with open_env_pool({"name": TOY, "servers": 1, "timeout": 5, "unavailable_after": 3}) as pool:
            assert isinstance(pool, HTTPEnvPool)
            pids = _children()
            assert pids, "no server process was launched"
            result = await play(pool)
        return result, pids  # leaving the block stopped the launched server

    result, pids = asyncio.run(launched())
    assert result[2] is True
    assert wait_gone(pids)

    with EnvLauncher(TOY) as launcher:
        remote = open_env_pool({"name": TOY, "urls": launcher.urls})
        assert isinstance(remote, HTTPEnvPool) and remote.urls == launcher.urls
        assert asyncio.run(play(remote))[2] is True


def _children() -> list[int]:
    """Pids of this process's children (from /proc), to check that launched servers end."""
    me = str(os.getpid())
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if stat[1] == me:
                out.append(int(entry.name))
    return out
