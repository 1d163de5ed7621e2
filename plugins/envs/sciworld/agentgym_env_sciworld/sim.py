"""One ScienceWorld simulator, stepped through ``AgentInterface.step`` with raw py4j commands.

ScienceWorld's Python-facing ``PythonInterface.step`` wraps the simulation step with work an
env does not need: it renders look-around and inventory for a run history and, for a debug
print, lists the names of every visible object, on each step. ``AgentInterface.step`` is the
simulation itself (parse the action, run it, tick the world, score the goals) and returns
``(observation, score, completed)``. A step here is four small py4j commands (step, read the
result, free it, read the move counter) sent without py4j's per-call reflection.
"""
from __future__ import annotations

from typing import Any

from py4j import protocol as proto

# PythonInterface.step answers these words itself, without acting (kept identical by routing them there).
_SPECIAL = frozenset({"help", "objects", "task"})
# What PythonInterface.step says when the simulation returns an empty observation.
_EMPTY = "Unknown action.  Type 'help' for a list of actions, and 'objects' for a list of possible object referents. "


class Simulator:
    """A ``PythonInterface`` (load, gold paths, valid actions) plus a fast ``step``."""

    def __init__(self, gateway: Any) -> None:
        self._client = gateway._gateway_client
        self.py = gateway.jvm.scienceworld.runtime.pythonapi.PythonInterface()
        self._agent: Any = None  # the task's AgentInterface; holding it keeps it alive in the gateway
        self._score, self._completed = 0.0, False

    def load(self, task: str, variation: int, simplifications: str, gold_path: bool) -> str:
        """Load a task variation; returns the simulator's error text ("" when it loaded)."""
        self._agent = None
        error = self.py.load(task, variation, simplifications, gold_path)
        if not error:
            self._agent = self.py.agentInterface().get()
        self._score, self._completed = 0.0, False
        return error

    def step(self, action: str) -> tuple[str, float, bool, int]:
        """One action: ``(observation, score 0-1 or -1 on failure, completed, moves)``, as ``PythonInterface``."""
        if self._agent is None:
            raise RuntimeError("sciworld: step before a task was loaded")
        agent = self._agent._target_id
        if action.strip().lower() in _SPECIAL:
            return self.py.step(action), self._score, self._completed, self.moves()
        answer = self._call(agent, "step", proto.get_command_part(action))
        if not answer.startswith(proto.SUCCESS + proto.REFERENCE_TYPE):
            raise RuntimeError(f"sciworld: unexpected answer from AgentInterface.step: {answer[:200]!r}")
        ref = answer[2:]
        try:
            text = proto.get_return_value(self._call(ref, "toString"), self._client, ref, "toString")
        finally:
            self._client.send_command(proto.MEMORY_COMMAND_NAME + proto.MEMORY_DEL_SUBCOMMAND_NAME + ref + "\ne\n")
        # scala.Tuple3.toString: "(observation,score,completed)"; only the observation may hold commas.
        obs, score, completed = text[1:-1].rsplit(",", 2)
        self._score, self._completed = float(score), completed == "true"
        return obs or _EMPTY, self._score, self._completed, self.moves()

    def step_python(self, action: str) -> tuple[str, float, bool, int]:
        """The same through ScienceWorld's own ``PythonInterface.step`` (slower; the reference)."""
        obs = self.py.step(action)
        self._score, self._completed = float(self.py.getScore()), bool(self.py.getCompleted())
        return obs, self._score, self._completed, int(self.py.getNumMoves())

    def moves(self) -> int:
        """Moves (time steps) taken since the task was loaded."""
        answer = self._call(self._agent._target_id, "getCurIterations")
        return int(proto.get_return_value(answer, self._client, self._agent._target_id, "getCurIterations"))

    def _call(self, target: str, method: str, *parts: str) -> str:
        answer = self._client.send_command(proto.CALL_COMMAND_NAME + target + "\n" + method + "\n"
                                           + "".join(parts) + proto.END_COMMAND_PART)
        if answer.startswith(proto.ERROR):
            proto.get_return_value(answer, self._client, target, method)  # raises Py4JJavaError / Py4JError
        return answer
