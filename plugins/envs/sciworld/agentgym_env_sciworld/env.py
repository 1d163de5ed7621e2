"""``SciWorldEnv``: ScienceWorld's 30 science tasks as an AgentGym env, stepped the fast way.

ScienceWorld's Python wrapper fetches the full valid-action list (~400-1,200 strings over
py4j) after every step, which caps it at 10-20 steps/s, and its ``PythonInterface.step`` adds
history rendering and debug output to each step. This env steps the simulation itself
(``AgentInterface.step``, see ``sim.py``). The valid actions are a hint the agent asks for
(``valid actions``), or an option.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, List, Optional

from agentgym_core import BaseEnv, ConfigError, config_from

from . import jvm as jvms
from .tasks import AGENTGYM, OURS

INSTRUCTION = """\
You are an agent in ScienceWorld, a text simulation of a house (kitchen, bathroom, workshop, \
art studio, greenhouse, outside, ...) where you carry out elementary science experiments: \
boil or freeze a substance, measure a melting point, build an electric circuit, grow a plant, \
mix chemicals, find animals and plants, and more. The first observation gives your task and \
what you see.

Actions (one per turn; OBJ and LOC are names of things or places you can see):
- look around: describe the room you are in
- look at OBJ / look in OBJ: describe an object or what is inside it
- go to LOC: move to a neighbouring place (open the door first, e.g. "open door to kitchen")
- open OBJ / close OBJ
- pick up OBJ / put down OBJ / move OBJ to OBJ: carry things or put them somewhere
- pour OBJ in OBJ / dunk OBJ in OBJ / mix OBJ
- activate OBJ / deactivate OBJ: e.g. a stove or a sink
- use OBJ on OBJ: e.g. "use thermometer on water"
- connect OBJ to OBJ / disconnect OBJ: electrical terminals and wires
- eat OBJ / flush OBJ / read OBJ
- focus on OBJ: say which object the task is about. Focus only when the task asks you to: \
focusing on the wrong object ends the task with failure.
- wait / wait1: let 10 steps / 1 step of time pass
- inventory: what you carry; task: repeat the task
- valid actions: list the actions that are valid right now (a hint; it takes no time)
When the simulator lists numbered choices for an ambiguous action, answer with the number.

Answer in this format:
Thought: <your reasoning>
Action: <one action>"""

_HINT_WORDS = {"valid actions", "valid action", "hint", "hints", "list actions", "available actions",
               "check valid actions", "check available actions"}
_UNKNOWN = "No known action matches that input."
_HINT_LINE = "- valid actions: list the actions that are valid right now (a hint; it takes no time)\n"


@dataclass
class SciWorldConfig:
    """Options of the ``sciworld`` env (the ``env`` section of a run config)."""

    #: Task names to use (None: all 30). Ids stay global; splits keep only these tasks.
    tasks: Optional[List[str]] = None
    #: ScienceWorld simplifications, e.g. "easy" or "openDoors,teleportAction" ("" = none).
    simplifications: str = ""
    #: Moves after which the episode ends (ScienceWorld's own default is 100; 0 = no limit).
    step_limit: int = 100
    #: Put the valid-action list into every step's info (slow: ~7 steps/s).
    valid_actions_in_info: bool = False
    #: How many actions a ``valid actions`` hint lists at most.
    hint_limit: int = 80
    #: Ask the simulator for a gold action sequence at reset (for scripted solvers; slower reset).
    gold_path: bool = False
    #: The Java binary and the JVM heap cap.
    java: str = "java"
    java_heap: str = "256m"
    #: Sessions that share one JVM (more: less memory; fewer: more parallel steps).
    sessions_per_jvm: int = 8
    #: Step through the simulation directly (False: through ScienceWorld's PythonInterface.step,
    #: which also renders a run history and debug output: same results, ~15-25% slower).
    fast_step: bool = True
    #: ``none``: this env's task ids, texts and 0-1 rewards. ``agentgym``: AgentGym's sciworld
    #: server's (its 23-task id list, the simulator's own texts, its 0-100 score and reset
    #: fields ``task_description``, ``task_name``, ``var_num``); see docs/envs.md.
    compat: str = "none"

    def __post_init__(self) -> None:
        _check_compat(self.compat)
        if int(self.sessions_per_jvm) < 1 or int(self.hint_limit) < 1 or int(self.step_limit) < 0:
            raise ConfigError("env.sessions_per_jvm and env.hint_limit must be >= 1 and env.step_limit >= 0")
        if self.tasks is None:
            return
        self.tasks = [self.tasks] if isinstance(self.tasks, str) else list(self.tasks)
        agentgym = self.compat == "agentgym"
        known = [t.name for t in (AGENTGYM if agentgym else OURS).tasks]
        bad = [t for t in self.tasks if t not in known]
        if bad and agentgym:
            raise ConfigError(f"env.tasks: {bad!r} not in AgentGym's list of ScienceWorld tasks (env.compat="
                              f"agentgym leaves out 5-x, 9-x and 10-x); its tasks: {', '.join(known)}")
        if bad or not self.tasks:
            raise ConfigError(f"env.tasks: unknown ScienceWorld task(s) {bad or self.tasks!r}; known tasks: "
                              f"{', '.join(known)}")


class SciWorldEnv(BaseEnv):
    """ScienceWorld: one simulator per session, hosted in a JVM shared with other sessions."""

    instruction = INSTRUCTION
    action_format = "react"
    Config = SciWorldConfig

    def __init__(self, **options: Any) -> None:
        super().__init__()
        self.config = cfg = config_from(self, options)
        #: AgentGym's ids, texts and scores (``compat: agentgym``)
        self.agentgym = cfg.compat == "agentgym"
        if self.agentgym:
            self.instruction = INSTRUCTION.replace(_HINT_LINE, "")
        self.numbering = AGENTGYM if self.agentgym else OURS
        self.task_names = cfg.tasks
        self.simplifications = cfg.simplifications
        self.step_limit = int(cfg.step_limit)
        self.valid_actions_in_info = bool(cfg.valid_actions_in_info)
        self.hint_limit = int(cfg.hint_limit)
        self.gold_path = bool(cfg.gold_path)
        self.fast_step = bool(cfg.fast_step)
        self._java, self._heap, self._per_jvm = cfg.java, str(cfg.java_heap), int(cfg.sessions_per_jvm)
        self._jvm: Any = None  # started lazily: describing the env needs no JVM
        self._sim: Any = None
        self._task: Any = None
        self._variation = 0
        self._description = ""
        self._score = 0.0
        self._done = True
        self._gold: list[str] = []

    # -- self-description -------------------------------------------------------------------
    def splits(self) -> dict[str, list[int]]:
        return {name: self.numbering.split_ids(name, self.task_names) for name in ("train", "dev", "test")}

    def category(self, task_id: int) -> str:
        return self.numbering.locate(task_id)[0].name

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info["tasks"] = [t.name for t in self.numbering.tasks if self.task_names is None or t.name in self.task_names]
        info["task_ids"] = (f"0..{self.numbering.total - 1}: (task, variation), tasks in ScienceWorld order"
                            f"{' without 5-x, 9-x, 10-x (AgentGym)' if self.agentgym else ''}, variations in order")
        if self.agentgym:
            info["compat"] = "agentgym"
        return info

    @property
    def task(self) -> tuple[str, int]:
        """``(task name, variation)`` of the current episode."""
        return (self._task.name if self._task else "", self._variation)

    def gold_actions(self) -> list[str]:
        """The simulator's gold action sequence for this episode (needs ``gold_path=True``)."""
        if not self.gold_path:
            raise ConfigError("sciworld: gold_actions() needs the env option gold_path=true (set at construction)")
        return list(self._gold)

    # -- the episode ------------------------------------------------------------------------
    def _simulator(self) -> Any:
        if self._sim is None:
            self._jvm = jvms.acquire(self._java, self._heap, self._per_jvm)
            self._sim = self._jvm.new_simulator()
        return self._sim

    def reset(self, *, task_id: int | None = None, seed: int | None = None) -> str:
        """Load (task, variation) of *task_id*; the first observation is the task and the room."""
        if task_id is None:
            task_id = random.Random(seed).choice(self.splits()["train"])
        self._task, self._variation = self.numbering.locate(int(task_id))
        sim = self._simulator()
        with self._jvm.lock:
            error = sim.load(self._task.name, self._variation, self.simplifications, self.gold_path)
            if error:
                raise ConfigError(f"sciworld: cannot load task {task_id} ({self._task.name}, variation "
                                  f"{self._variation}) with simplifications {self.simplifications!r}: {error}")
            self._gold = list(sim.py.getGoldActionSequence()) if self.gold_path else []
            room, raw = (sim.step if self.fast_step else sim.step_python)("look around")[:2]
            task = sim.py.getTaskDescription()
        self._score, self._done = 0.0, False
        if self.agentgym:  # AgentGym's client shows its agent the task, a newline and the room
            self._description, self._score = task, float(_percent(raw))
            return f"{task}\n{room}"
        return f"{task}\n\n{room}"

    def step(self, action: str) -> tuple[str, float, bool, dict]:
        if self._sim is None or self._done:
            why = "No task is running" if self._sim is None else "The task is over"
            return f"{why}: reset the env to start a task.", 0.0, True, {"invalid_action": True}
        if self.agentgym:
            return self._step_agentgym(str(action))
        text = " ".join(str(action).split())
        if text.lower().rstrip(".") in _HINT_WORDS:
            return self._hint(), 0.0, False, {"hint": True, "score": round(100 * self._score)}
        with self._jvm.lock:
            obs, raw, completed, moves = (self._sim.step if self.fast_step else self._sim.step_python)(text)
            valid = list(self._sim.py.getValidActionObjectCombinations()) if self.valid_actions_in_info else None
        score = max(raw, 0.0)
        reward, self._score = score - self._score, score
        failed = raw < 0
        truncated = bool(self.step_limit) and moves >= self.step_limit and not completed and not failed
        self._done = completed or failed or truncated
        info: dict[str, Any] = {"score": round(100 * raw), "score_norm": score, "moves": moves,
                                "task": self._task.name, "variation": self._variation}
        if obs.startswith(_UNKNOWN):
            info["invalid_action"] = True
            obs = (f"{_UNKNOWN} Write one action such as 'look around', 'open door to kitchen', 'go to kitchen', "
                   "'pick up thermometer' or 'focus on OBJ', naming things you can see. "
                   "Write 'valid actions' to list the actions that are valid here.")
        if failed:
            obs += "\nThe task failed (for example, you focused on the wrong object)."
        elif truncated:
            obs += f"\nThe step limit ({self.step_limit} moves) is reached."
        if self._done:
            info["success"] = completed and raw >= 1.0
            info["truncated"] = truncated
        if valid is not None:
            info["valid_actions"] = valid
        return obs, reward, self._done, info

    def _step_agentgym(self, action: str) -> tuple[str, float, bool, dict]:
        """The simulator's own answer, scored as AgentGym's server scores it: 0-100 (-100 on
        failure), the step reward the change of score, done when completed, failed or past
        ``step_limit`` moves."""
        with self._jvm.lock:
            obs, raw, completed, moves = (self._sim.step if self.fast_step else self._sim.step_python)(action)
            valid = list(self._sim.py.getValidActionObjectCombinations()) if self.valid_actions_in_info else None
        score = _percent(raw)
        reward, self._score = score - self._score, float(score)
        truncated = bool(self.step_limit) and moves > self.step_limit
        self._done = completed or score < 0 or truncated
        info: dict[str, Any] = {"score": score, "score_norm": max(score, 0) / 100, "moves": moves,
                                "task": self._task.name, "variation": self._variation,
                                "invalid_action": obs.startswith(_UNKNOWN)}
        if self._done:
            info["success"] = completed and score >= 100
            info["truncated"] = truncated and not completed and score >= 0
        if valid is not None:
            info["valid_actions"] = valid
        return obs, float(reward), self._done, info

    def wire_fields(self, call: str) -> dict[str, Any] | None:
        """AgentGym's reset fields (``compat: agentgym``): ``task_name``, ``var_num``, ``task_description``, ``deleted``."""
        if self.agentgym and call == "reset":
            return {"task_name": self._task.name, "var_num": self._variation, "task_description": self._description,
                    "deleted": False}
        return None

    def _hint(self) -> str:
        with self._jvm.lock:
            valid = list(self._sim.py.getValidActionObjectCombinations())
        # Drop combinations with the agent or the air; take actions round-robin over verbs so a
        # short hint still shows every kind of action; wiring actions (hundreds) go last.
        useful = sorted({a for a in valid if " agent" not in f" {a}" and " air" not in f" {a}"})
        groups: dict[str, list[str]] = {}
        for a in useful:
            groups.setdefault(a.split(" ", 1)[0], []).append(a)
        wiring = [v for v in sorted(groups) if v in ("connect", "disconnect")]
        shown: list[str] = []
        for verbs in ([v for v in sorted(groups) if v not in wiring], wiring):
            for rank in range(max((len(groups[v]) for v in verbs), default=0)):
                shown.extend(groups[v][rank] for v in verbs if rank < len(groups[v]))
        shown = sorted(shown[: self.hint_limit], key=lambda a: (a.split(" ", 1)[0] in wiring, a))
        more = f"\n(... and {len(useful) - len(shown)} more)" if len(useful) > len(shown) else ""
        return f"Valid actions here ({len(useful)}):\n" + "\n".join(shown) + more

    def close(self) -> None:
        sim, self._sim = self._sim, None
        if sim is not None and self._jvm is not None:
            jvm, self._jvm = self._jvm, None
            jvms.release(jvm)
        self._done = True


def _percent(raw: float) -> int:
    """ScienceWorld's score as its Python API and AgentGym report it: 0-100, -100 on failure."""
    return int(round(100 * raw))


def _check_compat(compat: Any) -> None:
    if compat not in ("none", "agentgym"):
        raise ConfigError(f"env.compat must be 'none' (this env's own task ids and 0-1 rewards) or 'agentgym' "
                          f"(AgentGym's sciworld server's), got {compat!r}")
