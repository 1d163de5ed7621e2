"""Run untrusted code and its tests in a locked-down subprocess; report what happened.

Layers (see the README for what each one stops and its caveats):

* kernel: a fresh process session killed as a group at the end; resource limits on CPU
  time, address space (memory), file size, open files and processes; a new network
  namespace with no usable interface; when we run as root, the child drops to ``nobody``
  so that the process limit applies and the file system protects itself;
* interpreter: an audit hook (``sys.addaudithook``, which code cannot remove) refusing
  sockets, new processes, ``ctypes`` and writes outside the private directory, and recording
  each refusal so that it is reported;
* a private temporary directory as the working directory, deleted afterwards;
* a wall-clock limit from the parent, a per-test time limit inside the child.
"""
from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HARNESS = Path(__file__).with_name("_harness.py")


@dataclass
class Limits:
    """Resource limits of one sandboxed run."""

    #: Wall-clock seconds for the whole run (start-up, loading, all tests).
    time_s: float = 15.0
    #: Seconds each test (and loading the solution) may take.
    per_test_s: float = 1.0
    #: Address-space limit of the child (RLIMIT_AS).
    memory_mb: int = 512
    #: Processes of the sandbox user (RLIMIT_NPROC; applies when the child runs as ``nobody``).
    nproc: int = 64
    #: Largest file the child may write (RLIMIT_FSIZE).
    fsize_mb: int = 8
    #: Open file descriptors.
    nofile: int = 64
    #: Characters of the code's own printed output kept for the report.
    max_output: int = 2000


@dataclass
class RunResult:
    """What a sandboxed test run reports."""

    #: One dict per test: ``ok``, ``source`` (first line of the test), ``error``.
    tests: list[dict[str, Any]] = field(default_factory=list)
    #: Why nothing could be tested (syntax error, crash on import, killed), if so.
    error: str | None = None
    #: Operations the sandbox refused ("network access (socket.connect)", ...).
    violations: list[str] = field(default_factory=list)
    #: The code's printed output (truncated).
    output: str = ""
    #: Which isolation layers were in force (``netns``, ``uid``, ``audit``).
    isolation: dict[str, Any] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return len(self.tests)

    @property
    def passed(self) -> int:
        return sum(1 for t in self.tests if t.get("ok"))

    @property
    def fraction(self) -> float:
        return self.passed / self.total if self.total else 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _sandbox_user() -> tuple[int, int] | None:
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam("nobody")
        return entry.pw_uid, entry.pw_gid
    except KeyError:
        return 65534, 65534


def run_tests(code: str, test: str, entry_point: str, n_tests: int, limits: Limits | None = None,
              *, audit: bool = True, network_namespace: bool = True, mount_namespace: bool = True) -> RunResult:
    """Run HumanEval-style *test* (a ``check(candidate)`` function) against *code*.

    :param n_tests: how many tests *test* holds, so that a run killed before reporting
        still counts every test as failed.
    :param audit: install the interpreter-level guard (turn off only to test the kernel layer).
    """
    limits = limits or Limits()
    user = _sandbox_user()
    workdir = Path(tempfile.mkdtemp(prefix="codefix-"))
    try:
        sandbox = workdir / "sandbox"
        sandbox.mkdir()
        (sandbox / "solution.py").write_text(code)
        if user is not None:
            os.chmod(workdir, 0o711)
            os.chown(sandbox, *user)
            os.chown(sandbox / "solution.py", *user)
        nonce = secrets.token_hex(16)
        job = {
            "nonce": nonce, "code": code, "test": test, "entry_point": entry_point, "sandbox": str(sandbox),
            "uid": user[0] if user else None, "gid": user[1] if user else None, "audit": audit,
            "network_namespace": network_namespace, "mount_namespace": mount_namespace,
            "limits": {**asdict(limits), "cpu_s": int(limits.time_s) + 1},
        }
        env = {"PATH": "/usr/bin:/bin", "HOME": str(sandbox), "TMPDIR": str(sandbox), "LANG": "C.UTF-8"}
        with open(workdir / "stdout", "w+b") as out:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-B", str(HARNESS)], stdin=subprocess.PIPE, stdout=out,
                stderr=subprocess.DEVNULL, cwd=str(sandbox), env=env, start_new_session=True,
            )
            killed = None
            try:
                proc.communicate(json.dumps(job).encode(), timeout=limits.time_s)
            except subprocess.TimeoutExpired:
                killed = f"time limit: the run was stopped after {limits.time_s:g} s"
            finally:
                _kill_group(proc)
            out.seek(0)
            report = _find_report(out.read(4 * 1024 * 1024), nonce)
        if report is None:
            reason = killed or _exit_reason(proc.returncode, limits)
            return RunResult(tests=[{"ok": False, "error": "not run"} for _ in range(n_tests)], error=reason)
        return RunResult(**{k: report.get(k, v) for k, v in asdict(RunResult()).items()})
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _kill_group(proc: subprocess.Popen, grace_s: float = 5.0) -> None:
    """Kill the child's whole process group (forked children included), reap the child, and
    wait (up to *grace_s*) until the group is gone."""
    try:
        os.killpg(proc.pid, 9)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 9)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.01)


def _find_report(data: bytes, nonce: str) -> dict[str, Any] | None:
    marker = nonce.encode() + b" "
    for line in data.splitlines():
        if line.startswith(marker):
            try:
                return json.loads(line[len(marker):])
            except ValueError:
                return None
    return None


def _exit_reason(code: int | None, limits: Limits) -> str:
    signals = {9: f"killed (memory limit {limits.memory_mb} MB or CPU limit)", 24: "stopped: CPU time limit",
               25: f"stopped: file size limit ({limits.fsize_mb} MB)", 11: "crashed (segmentation fault)"}
    if code is not None and code < 0:
        return "the test process was " + signals.get(-code, f"killed by signal {-code}")
    return f"the test process exited with status {code} before reporting"
