"""Containment: code that opens a socket, fork-bombs, writes outside its directory, eats memory
or never stops is stopped and reported, by the interpreter guard and by the kernel layer alone.
"""
import os
import socket
import threading
from pathlib import Path

import pytest

from agentgym_env_codefix.env import CodeFixEnv
from agentgym_env_codefix.sandbox import Limits, run_tests

PROMPT = "def f(x):\n"
TEST = "def check(candidate):\n    assert candidate(1) == 2\n    assert candidate(2) == 3\n"


def run(body, **kw):
    return run_tests(PROMPT + body, TEST, "f", 2, kw.pop("limits", Limits(time_s=10)), **kw)


def group_members(pgid):
    """The live processes of process group *pgid*, read from /proc (other tests' sandboxes, running beside
    this one under pytest-xdist, are other groups)."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()  # after the command: state, ppid, pgrp, ...
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(stat.parent.name))
    return members


@pytest.fixture
def listener():
    """A real TCP server on loopback that records every connection it accepts."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    srv.settimeout(0.2)
    accepted, stop = [], threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
                accepted.append(conn)
            except OSError:
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield srv.getsockname()[1], accepted
    stop.set()
    thread.join()
    srv.close()


def test_correct_code_passes_and_layers_are_reported():
    r = run("    return x + 1\n")
    assert (r.passed, r.total, r.error, r.violations) == (2, 2, None, [])
    assert r.isolation["audit"] is True


@pytest.mark.parametrize("audit", [True, False])
def test_socket_is_contained_and_reported(listener, audit):
    port, accepted = listener
    r = run(f"    import socket\n    socket.create_connection(('127.0.0.1', {port}), timeout=1)\n    return x + 1\n",
            audit=audit)
    if not audit and not r.isolation.get("netns"):
        pytest.skip("no network namespace here (needs root or user namespaces): only the audit guard applies")
    assert r.passed == 0 and not accepted
    if audit:
        assert any(v.startswith("network access (socket.") for v in r.violations)
        assert "sandbox: network access" in r.tests[0]["error"]
    else:
        assert "OSError" in r.tests[0]["error"] or "Errno" in r.tests[0]["error"]


@pytest.mark.parametrize("audit", [True, False])
def test_fork_bomb_is_contained_and_reported(audit, monkeypatch):
    import agentgym_env_codefix.sandbox as sandbox

    groups, popen = [], sandbox.subprocess.Popen

    def started(*args, **kwargs):  # the harness leads its own process group (start_new_session)
        proc = popen(*args, **kwargs)
        groups.append(proc.pid)
        return proc

    monkeypatch.setattr(sandbox.subprocess, "Popen", started)
    r = run("    import os\n    while True:\n        os.fork()\n", audit=audit, limits=Limits(time_s=10, nproc=16))
    if not audit and r.isolation.get("uid", 0) == 0:
        pytest.skip("running unprivileged as root is impossible here: RLIMIT_NPROC does not bind root")
    assert r.passed == 0
    if audit:
        assert r.violations == ["starting processes (os.fork)"]
    else:
        assert r.error or "BlockingIOError" in r.tests[0]["error"] or "Resource temporarily" in r.tests[0]["error"]
    assert len(groups) == 1 and group_members(groups[0]) == []  # the whole process group is gone


@pytest.mark.parametrize("audit", [True, False])
def test_write_outside_the_sandbox_is_contained_and_reported(tmp_path, audit):
    target = tmp_path / "escaped.txt"
    home = os.path.expanduser("~/codefix-escape-test.txt")
    r = run(f"    open({str(target)!r}, 'w').write('x')\n    open({home!r}, 'w').write('x')\n    return x + 1\n",
            audit=audit)
    if not audit and r.isolation.get("uid") == os.geteuid() and not r.isolation.get("private_tmp"):
        pytest.skip("not root: without the guard nothing but file permissions stops writes as the same user")
    assert not target.exists() and not os.path.exists(home)
    assert r.passed == 0
    if audit:
        assert r.violations == [f"writing outside the sandbox ({target})"]
        assert "sandbox: writing outside the sandbox" in r.tests[0]["error"]


def test_writing_inside_the_private_directory_is_allowed():
    r = run("    open('scratch.txt', 'w').write(str(x))\n    return int(open('scratch.txt').read()) + 1\n")
    assert (r.passed, r.violations) == (2, [])


def test_memory_limit():
    r = run("    buf = bytearray(2 ** 31)\n    return x + 1\n", limits=Limits(time_s=10, memory_mb=256))
    assert r.passed == 0 and "MemoryError (memory limit 256 MB)" in r.tests[0]["error"]


def test_per_test_time_limit_and_wall_clock_kill():
    r = run("    while True:\n        pass\n", limits=Limits(time_s=10, per_test_s=0.3))
    assert r.passed == 0 and "time limit (0.3 s per test)" in r.tests[0]["error"]
    # Code that disarms the per-test timer is stopped by the parent's wall clock.
    r = run("    import signal\n    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n    while True:\n        pass\n",
            limits=Limits(time_s=2, per_test_s=0.3))
    assert r.error == "time limit: the run was stopped after 2 s" and r.passed == 0 and r.total == 2


def test_env_reports_containment_to_the_agent(listener):
    port, accepted = listener
    env = CodeFixEnv()
    env.reset(task_id=0)
    env.step(f"Action: edit 12\n    for idx, elem in enumerate(__import__('socket').create_connection(('127.0.0.1', {port}))):")
    obs, reward, done, info = env.step("submit")
    assert not accepted and done and not info["success"]
    assert "Sandbox blocked: network access (socket." in obs
    assert info["violations"]


def test_equality_cheats_and_builtin_patches_do_not_pass():
    cheat = "    class Any:\n        def __eq__(self, other):\n            return True\n    return Any()\n"
    r = run(cheat)
    assert r.passed == 0 and "returned a solution.f.<locals>.Any object" in r.tests[0]["error"]
    r = run("    return [type('X', (), {'__eq__': lambda s, o: True})()]\n")
    assert r.passed == 0
    patch = "    import builtins\n    builtins.abs = lambda v: 0\n    return x + 1\n"
    r = run(patch)
    assert r.passed == 0 and r.violations == ["changing Python builtins (abs)"]
