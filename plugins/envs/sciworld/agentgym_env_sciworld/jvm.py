"""The ScienceWorld JVMs: a small pool shared by the env sessions of one process.

A JVM costs ~5 s to start and ~250 MB, but one JVM can host several independent simulators
(one ``PythonInterface`` object per session). So sessions share JVMs, up to
``sessions_per_jvm`` each; a new JVM starts when all are full and stops when its last session
closes. Calls into one JVM are serialised by a lock (the simulator was not written for
concurrent use); more JVMs give parallelism. Heap is capped with ``-Xmx`` (ScienceWorld's own
launcher leaves it at the JVM default, which grows to ~1.5 GB).
"""
from __future__ import annotations

import atexit
import shutil
import subprocess
import threading

from agentgym_core import AgentGymError

from .sim import Simulator


class JavaNotFoundError(AgentGymError):
    """No Java runtime to run the ScienceWorld simulator."""


class _JVM:
    def __init__(self, key: tuple[str, str]) -> None:
        from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway
        from scienceworld.constants import BASEPATH, JAR_PATH

        java, heap = key
        self.key = key
        port, proc = launch_gateway(classpath=JAR_PATH, die_on_exit=True, cwd=BASEPATH, return_proc=True,
                                    javaopts=[f"-Xmx{heap}", "-XX:+UseSerialGC"], java_path=java)
        self.proc = proc
        self.gateway = JavaGateway(gateway_parameters=GatewayParameters(port=port, auto_field=True), java_process=proc)
        self.lock = threading.RLock()
        self.sessions = 0
        # The simulator prints debug lines on every step; py4j pipes the JVM's stdout to a Python
        # thread that throws them away. Drop them inside the JVM instead (before Scala's Console
        # captures System.out on its first use).
        lang, io = self.gateway.jvm.java.lang, self.gateway.jvm.java.io
        lang.System.setOut(io.PrintStream(io.OutputStream.nullOutputStream()))

    def new_simulator(self) -> Simulator:
        with self.lock:
            return Simulator(self.gateway)

    def stop(self) -> None:
        # Close only our side: asking the gateway to shut down races the JVM closing its sockets,
        # and py4j then logs "Exception while sending command" for a stop that went fine.
        # Marked disconnected first: py4j frees a Java object that Python collects later by a command
        # to this JVM, which would connect to a dead port and log the failure with a traceback from
        # inside whatever the collector interrupted (CPython 3.11 then fails an ast.parse under way).
        self.gateway._gateway_client.is_connected = False
        try:
            self.gateway.close(keep_callback_server=False, close_callback_server_connections=True)
        except Exception:  # noqa: BLE001 - the JVM may already be gone
            pass
        try:
            if self.proc.poll() is None:
                self.proc.stdin.write(b"\n")  # die_on_exit: the JVM exits when its stdin breaks
                self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


_pool: list[_JVM] = []
_pool_lock = threading.Lock()


def find_java(java: str) -> str:
    """The path of *java*, or a :class:`JavaNotFoundError` that says how to install it."""
    path = shutil.which(java)
    if path is None:
        raise JavaNotFoundError(
            f"sciworld: the Java runtime {java!r} was not found, and ScienceWorld's simulator is a JAR "
            "that needs Java 17 or newer. Install it (Debian/Ubuntu: `sudo apt-get install "
            "openjdk-17-jre-headless`; scripts/setup.sh does this from plugins/envs/sciworld/"
            "debian-packages.txt) or point the env option `java` at a java binary."
        )
    return path


def acquire(java: str, heap: str, per_jvm: int) -> _JVM:
    """A JVM with room for one more session (starting one if needed); the session is counted."""
    key = (find_java(java), heap)
    with _pool_lock:
        for jvm in _pool:
            if jvm.key == key and jvm.sessions < per_jvm and jvm.proc.poll() is None:
                jvm.sessions += 1
                return jvm
        jvm = _JVM(key)
        jvm.sessions = 1
        _pool.append(jvm)
        return jvm


def release(jvm: _JVM) -> None:
    """One session of *jvm* ended; stop the JVM when it was the last."""
    with _pool_lock:
        jvm.sessions -= 1
        if jvm.sessions > 0:
            return
        if jvm in _pool:
            _pool.remove(jvm)
    jvm.stop()


def running() -> int:
    """How many ScienceWorld JVMs this process runs (for tests and benchmarks)."""
    with _pool_lock:
        return len(_pool)


@atexit.register
def _stop_all() -> None:
    with _pool_lock:
        jvms = list(_pool)
        _pool.clear()
    for jvm in jvms:
        jvm.stop()
