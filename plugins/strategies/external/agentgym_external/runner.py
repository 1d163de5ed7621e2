"""Running the user's agent for one episode: a Python function, a coroutine, or a command, bounded in time.

A plain function runs in a thread of its own (its blocking ``openai`` calls never hold up the
rollout's event loop); a coroutine function runs on that loop; a command runs as a process group
with the task in its environment. Whatever the agent does, :func:`run_agent` returns within the
timeout: a command past it is killed (SIGTERM, then SIGKILL), a thread cannot be, so it is left
behind with its episode's key revoked (every later call is refused), which the caller counts.
"""
from __future__ import annotations

import asyncio
import inspect
import os
import shlex
import signal
import tempfile
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentgym_core import ConfigError

from .task import RESULT_ENV, AgentTask

#: Nothing came back (a function returned None, a command wrote no result).
NO_RESULT: Any = None


class AgentTimeout(Exception):
    """The agent ran past its timeout."""


class AgentCrashed(Exception):
    """The agent raised (a function) or exited non-zero (a command); the message says how."""


def load_agent(target: str) -> Callable[..., Any]:
    """The function *target* names: ``package.module:function`` or ``path/to/file.py:function``."""
    module_name, _, attr = target.rpartition(":")
    if not module_name or not attr:
        raise ConfigError(f"agent.strategy.agent={target!r}: give 'package.module:function' or 'path/to/file.py:function'")
    try:
        if module_name.endswith(".py"):
            path = Path(module_name).expanduser().resolve()
            if not path.is_file():
                raise ConfigError(f"agent.strategy.agent={target!r}: no file {path}")
            from agentgym_core import load_script

            module = load_script(path, f"agentgym_external_agent_{path.stem}")
        else:
            import importlib

            module = importlib.import_module(module_name)
    except ConfigError:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's module failed to import: say which and why
        raise ConfigError(f"agent.strategy.agent={target!r}: importing {module_name!r} failed: "
                          f"{type(exc).__name__}: {exc}") from exc
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise ConfigError(f"agent.strategy.agent={target!r}: {module_name!r} has no function {attr!r}")
    return fn


def command_argv(command: Any) -> list[str]:
    """A command as an argument list (a string is split as a shell would, without running a shell)."""
    argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
    if not argv:
        raise ConfigError("agent.strategy.command is empty: give the program to run for each episode")
    return argv


async def run_agent(agent: Callable[..., Any] | None, command: list[str] | None, task: AgentTask,
                    timeout: float) -> Any:
    """Run one episode of the agent; its result (None when it gave none). Raises :class:`AgentTimeout`
    or :class:`AgentCrashed`."""
    if command is not None:
        return await _run_command(command, task, timeout)
    assert agent is not None
    if inspect.iscoroutinefunction(agent):
        try:
            return await asyncio.wait_for(agent(task), timeout)
        except asyncio.TimeoutError:
            raise AgentTimeout(f"the agent ran past its timeout ({timeout:g} s)") from None
        except Exception as exc:  # noqa: BLE001 - the user's code: any failure ends its episode only
            raise AgentCrashed(_describe(exc)) from exc
    return await _run_in_thread(agent, task, timeout)


async def _run_in_thread(agent: Callable[..., Any], task: AgentTask, timeout: float) -> Any:
    loop = asyncio.get_running_loop()
    done: asyncio.Future = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if not done.done():
            (done.set_result if ok else done.set_exception)(value)

    def target() -> None:
        try:
            outcome = (True, agent(task))
        except BaseException as exc:  # noqa: BLE001 - handed to the episode
            outcome = (False, AgentCrashed(_describe(exc)))
        try:
            loop.call_soon_threadsafe(settle, *outcome)
        except RuntimeError:  # the rollout is over (this agent had timed out): nobody waits for it
            pass

    threading.Thread(target=target, daemon=True, name=f"agentgym-agent-{task.episode_id}").start()
    try:
        return await asyncio.wait_for(done, timeout)
    except asyncio.TimeoutError:
        raise AgentTimeout(f"the agent ran past its timeout ({timeout:g} s); its thread is left behind with its "
                           "key revoked (a command agent is killed instead)") from None


async def _run_command(argv: list[str], task: AgentTask, timeout: float) -> Any:
    import json

    with tempfile.TemporaryDirectory(prefix="agentgym-agent-") as tmp:
        result_path = os.path.join(tmp, "result.json")
        env = {**os.environ, **task.environ(), RESULT_ENV: result_path}
        try:
            proc = await asyncio.create_subprocess_exec(*argv, env=env, stdout=asyncio.subprocess.PIPE,
                                                        stderr=asyncio.subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            raise AgentCrashed(f"cannot start {argv[0]!r}: {exc.strerror or exc}") from None
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout)
        except asyncio.TimeoutError:
            await _kill(proc)
            raise AgentTimeout(f"the agent command ran past its timeout ({timeout:g} s) and was killed") from None
        except BaseException:
            await _kill(proc)
            raise
        if proc.returncode != 0:
            tail = (err or out or b"").decode(errors="replace").strip().splitlines()[-3:]
            raise AgentCrashed(f"the agent command exited with status {proc.returncode}"
                               + (f": {' | '.join(tail)}" if tail else ""))
        if not os.path.exists(result_path):
            return NO_RESULT
        try:
            with open(result_path, encoding="utf-8") as f:
                return json.load(f)
        except ValueError as exc:
            raise AgentCrashed(f"the agent command wrote a result that is not JSON: {exc}") from None


async def _kill(proc: Any) -> None:
    """End a command's whole process group: SIGTERM, then SIGKILL after 2 s."""
    for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
        if proc.returncode is not None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            await asyncio.wait_for(proc.wait(), wait)
        except asyncio.TimeoutError:
            continue


def _describe(exc: BaseException) -> str:
    """``Type: message (file.py:line in function)`` at the innermost frame of the user's code."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    for frame in reversed(frames):
        if "site-packages" not in frame.filename and "agentgym_external" not in frame.filename:
            where = f" ({Path(frame.filename).name}:{frame.lineno} in {frame.name})"
            break
    return f"{type(exc).__name__}: {exc}{where}"


def interpret(value: Any) -> tuple[float, bool]:
    """``(score, success)`` of what an agent returned: a number (success when > 0), a bool, or a dict with
    ``reward`` (or ``score``) and optionally ``success``."""
    if isinstance(value, bool):
        return float(value), value
    if isinstance(value, (int, float)):
        return float(value), value > 0
    if isinstance(value, dict) and isinstance(value.get("reward", value.get("score")), (int, float)):
        score = float(value.get("reward", value.get("score")))
        return score, bool(value.get("success", score > 0))
    raise AgentCrashed(f"the agent returned {type(value).__name__} {str(value)[:80]!r}: return a number, a bool "
                       "or {'reward': x, 'success': bool} (or nothing, to take the env's reward)")

