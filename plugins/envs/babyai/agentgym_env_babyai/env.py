"""``BabyAIEnv``: BabyAI levels as a text game with primitive and high-level actions.

High-level actions ("go to red ball", "pick up grey key", "open blue door", "put next to red
box") expand into minigrid's primitive moves planned over cells the agent has seen; every
primitive goes through minigrid, so its mission verifier decides success.
"""
from __future__ import annotations

import random
import re
from typing import Any

import numpy as np

from agentgym_core import BaseEnv, config_from, normalize_action

from . import compat as agentgym
from . import nav
from .config import BabyAIConfig
from .levels import GROUPS, make_level, resolve_levels, task_level_and_seed
from .view import View, door_state, look
from .view import describe as describe_view

INSTRUCTION = """\
You are an agent in a BabyAI grid world: rooms with walls, doors and objects (balls, boxes \
and keys, each with a colour). Doors are open, closed or locked; a locked door opens only \
while you carry a key of its colour. You see a 7x7 area in front of you (walls block the \
view) and can carry one object. The first observation gives your mission.

Each observation lists what you see with positions relative to you, e.g. "a red ball, 2 \
steps forward and 1 step left", the distance to walls, and what you carry. When several \
visible objects look alike they are numbered, nearest first ("grey box 1", "grey box 2").

Actions (one per turn):
- go to <object>: walk until the object is right in front of you, e.g. "go to red ball"
- pick up <object>: go to an object and pick it up, e.g. "pick up grey key 2"
- open <door>: go to a door and open it, e.g. "open blue door"
- put next to <object>: put what you carry down next to an object
- turn left / turn right / move forward: one primitive move
- pick up / drop / toggle: act on the cell right in front of you (toggle opens or closes)
- check available actions: list what you can do now
<object> must be in view; if it is not, turn or move to look around.

Answer in this format:
Thought: <your reasoning>
Action: <one action>"""

_PRIMITIVE_WORDS = {
    "turn left": 0, "left": 0, "rotate left": 0,
    "turn right": 1, "right": 1, "rotate right": 1,
    "move forward": 2, "forward": 2, "go forward": 2, "move ahead": 2, "go straight": 2, "step forward": 2,
    "pick up": 3, "pickup": 3, "pick up object": 3, "pick": 3,
    "drop": 4, "put down": 4, "drop object": 4,
    "toggle": 5, "open": 5,
}
_HELP_WORDS = {"check available actions", "available actions", "check actions", "help", "look", "look around"}
_GO = re.compile(r"^(?:go to|goto|go next to|walk to|move to|approach|navigate to) (.+)$")
_PICK = re.compile(r"^(?:pick up|pickup|pick|take|grab|get) (.+)$")
_OPEN = re.compile(r"^(?P<verb>open|toggle|unlock) (?P<obj>.+)$")
_PUT = re.compile(r"^(?:put|drop|place)(?: .+?)? next to (.+)$")
_DROP = re.compile(r"^(?:drop|put down) (.+)$")
#: An object action inside a longer reply ("I will go to the red ball now."): the fallback
#: when the whole reply is not an action. The first such phrase counts.
_EMBEDDED = re.compile(
    r"\b(?P<verb>go to|going to|goes to|walk to|head to|move to|pick up|picking up|open|put next to) "
    r"(?:the |a |an )?"
    r"(?P<obj>(?:red|green|blue|purple|yellow|grey|gray) (?:ball|box|key|door)(?: \d+)?)\b"
)

BRIEF_INSTRUCTION = (
    "You are in a grid world with coloured balls, boxes, keys and doors. Each observation gives "
    "your mission and what you see. Actions: go to <object>, pick up <object>, open <door>, "
    "put next to <object>, turn left, turn right, move forward. Name objects as they are "
    "listed, e.g. \"go to red ball\". Reply with one action."
)


class BabyAIEnv(BaseEnv):
    """BabyAI: reach, pick up, open or arrange objects in grid-world rooms, from text."""

    instruction = INSTRUCTION
    action_format = "react"
    Config = BabyAIConfig

    def __init__(self, **options: Any) -> None:
        super().__init__()
        self.config = cfg = config_from(self, options)
        if cfg.compat == "agentgym":
            self.instruction = agentgym.INSTRUCTION
        if cfg.brief:  # "Reply with one action": the reply is the action
            self.instruction = agentgym.BRIEF_INSTRUCTION if cfg.compat == "agentgym" else BRIEF_INSTRUCTION
            self.action_format = "free"
        self.lenient = bool(cfg.lenient)
        self.levels = resolve_levels(cfg.levels)
        self.train_seeds, self.test_seeds, self.reward_mode = int(cfg.train_seeds), int(cfg.test_seeds), cfg.reward
        self._compat = agentgym.AgentGymBabyAI(self.train_seeds, self.test_seeds) if cfg.compat == "agentgym" else None
        if self._compat is not None:
            self.levels = tuple(agentgym.LEVELS)
        self._built: dict[str, Any] = {}
        self._level: Any = None
        self._level_name = ""
        self._view: View | None = None
        self._known = np.zeros((0, 0), dtype=bool)
        self._over = True
        self._success = self._truncated = False
        self._reward = 0.0

    # -- self-description -------------------------------------------------------------------
    def splits(self) -> dict[str, Any]:
        if self._compat is not None:
            return self._compat.splits()
        k = len(self.levels)
        return {
            "train": range(k * self.train_seeds),
            "test": range(k * self.train_seeds, k * (self.train_seeds + self.test_seeds)),
        }

    def category(self, task_id: int) -> str:
        if self._compat is not None:
            return agentgym.task_of(task_id)[0]
        return task_level_and_seed(task_id, self.levels)[0]

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info["levels"] = list(self.levels)
        info["task_ids"] = "level = levels[task_id % len(levels)], seed = task_id // len(levels)"
        if self._compat is not None:
            info["compat"] = "agentgym"
            return info
        info["groups"] = {g: [lv for lv in self.levels if lv in GROUPS[g]] for g in ("easy", "medium", "hard")}
        return info

    @property
    def level(self) -> Any:
        """The minigrid env of the current episode (for scripted solvers and debugging)."""
        return self._level

    @property
    def view(self) -> View | None:
        """What the agent sees now (objects with their action labels, walls)."""
        return self._view

    # -- the episode ------------------------------------------------------------------------
    def reset(self, *, task_id: int | None = None, seed: int | None = None) -> str:
        """Start *task_id* (see the module docs of ``levels``); without one, a random training task."""
        if task_id is None:
            task_id = random.Random(seed).choice(self.splits()["train"])
        if self._compat is not None:
            obs = self._compat.reset(task_id, make_level)
            self._level = self._compat.episode.level
            return obs
        name, level_seed = task_level_and_seed(task_id, self.levels)
        if name not in self._built:
            self._built[name] = make_level(name)
        self._level, self._level_name = self._built[name], name
        obs, _ = self._level.reset(seed=level_seed)
        self._known = np.zeros((self._level.width, self._level.height), dtype=bool)
        self._over, self._success, self._truncated, self._reward = False, False, False, 0.0
        self._look(obs["image"])
        return f"Your mission: {self._level.mission}.\n{describe_view(self._view, self._level.carrying)}"

    def step(self, action: str) -> tuple[str, float, bool, dict]:
        if self._compat is not None:
            return self._compat.step(action)
        if self._level is None:
            raise RuntimeError("BabyAIEnv.step() called before reset(); reset a task first")
        if self._over:
            return ("The episode is over; reset to start a new task.", 0.0, True,
                    self._info(invalid=True, failed=False, moves=0))
        start_moves = self._level.step_count
        text = normalize_action(action)
        message, invalid, failed = self._dispatch(text, action)
        embedded = False
        if invalid and self.lenient and self._level.step_count == start_moves:
            m = _EMBEDDED.search(str(action).lower())
            if m:
                verb = {"going to": "go to", "goes to": "go to", "walk to": "go to", "head to": "go to",
                        "move to": "go to", "picking up": "pick up"}.get(m.group("verb"), m.group("verb"))
                message, invalid, failed = self._dispatch(f"{verb} {m.group('obj')}", action)
                embedded = True
        moves = self._level.step_count - start_moves
        if self._over:
            if self._success:
                message += f"\nMission complete: {self._level.mission}."
            elif self._truncated:
                message += f"\nOut of moves: the mission was not completed within {self._level.max_steps} moves."
            else:
                message += "\nThe mission failed."
            obs = message
        else:
            obs = f"{message}\n{describe_view(self._view, self._level.carrying)}"
        reward = self._reward if self._over else 0.0
        info = self._info(invalid=invalid, failed=failed, moves=moves)
        info["embedded_action"] = embedded
        return obs, float(reward), self._over, info

    def wire_fields(self, call: str) -> dict[str, Any] | None:
        return self._compat.wire_fields(call) if self._compat is not None else None

    def close(self) -> None:
        if self._compat is not None:
            self._compat.close()
        for level in self._built.values():
            level.close()
        self._built.clear()
        self._level = None

    def available_actions(self) -> list[str]:
        """The actions that make sense now (the answer to "check available actions")."""
        if self._compat is not None:
            return list(self._compat.episode.scene.actions) if self._compat.episode else []
        level, view = self._level, self._view
        carrying, front = level.carrying, level.grid.get(*level.front_pos)
        actions = ["turn left", "turn right", "move forward"]
        if front is not None and front.can_pickup() and carrying is None:
            actions.append("pick up")
        if carrying is not None and front is None:
            actions.append("drop")
        if front is not None and front.type in ("door", "box"):
            actions.append("toggle")
        for seen in view.objects:
            actions.append(f"go to {seen.label}")
            if seen.obj.can_pickup() and carrying is None:
                actions.append(f"pick up {seen.label}")
            if seen.obj.type == "door" and not seen.obj.is_open:
                actions.append(f"open {seen.label}")
            if carrying is not None:
                actions.append(f"put next to {seen.label}")
        return actions

    # -- internals --------------------------------------------------------------------------
    def _info(self, *, invalid: bool, failed: bool, moves: int) -> dict[str, Any]:
        return {"success": self._success, "invalid_action": invalid, "action_failed": failed,
                "level": self._level_name, "moves": moves}

    def _look(self, image: np.ndarray) -> None:
        self._view = look(self._level, image)
        for x, y in self._view.visible:
            self._known[x, y] = True

    def _primitive(self, action: int) -> None:
        obs, reward, terminated, truncated, _ = self._level.step(action)
        self._look(obs["image"])
        if terminated or truncated:
            self._over, self._truncated = True, bool(truncated and not terminated)
            self._success = bool(terminated and reward > 0)
            self._reward = (1.0 if self.reward_mode == "binary" else float(reward)) if self._success else 0.0

    def _dispatch(self, text: str, raw: str) -> tuple[str, bool, bool]:
        """Apply the normalised action; return (message, invalid_action, action_failed)."""
        if text in _PRIMITIVE_WORDS:
            return self._do_primitive(_PRIMITIVE_WORDS[text])
        if text in _HELP_WORDS:
            return "Available actions: " + ", ".join(self.available_actions()) + ".", False, False
        for pattern, handler in ((_PUT, self._put_next_to), (_GO, self._go_to), (_PICK, self._pick_up)):
            m = pattern.match(text)
            if m:
                return self._with_target(m.group(1), handler)
        m = _OPEN.match(text)
        if m:
            return self._with_target(m.group("obj"), lambda t: self._open(t, m.group("verb")))
        m = _DROP.match(text)
        if m and self._level.carrying is not None and nav.parse_object(m.group(1)) is not None:
            return self._do_primitive(4)
        return self._invalid(f"Invalid action {str(raw).strip()[:80]!r}.")

    def _invalid(self, why: str) -> tuple[str, bool, bool]:
        names = ", ".join(s.label for s in self._view.objects) or "none"
        return ((f"{why} Valid actions: go to <object>, pick up <object>, open <door>, put next to "
                f"<object>, turn left, turn right, move forward, pick up, drop, toggle, check available "
                f"actions. Objects in view: {names}."), True, False)

    def _with_target(self, phrase: str, handler: Any) -> tuple[str, bool, bool]:
        parsed = nav.parse_object(phrase)
        if parsed is None:
            return self._invalid(f"{phrase!r} is not an object; name one as '<colour> <ball|box|key|door> [number]'.")
        target = nav.resolve(self._view.objects, *parsed)
        if target is None:
            return self._invalid(f"You cannot see a {phrase} here; turn or move to look around.")
        return handler(target)

    def _walk(self, goal: Any, what: str) -> str | None:
        """Walk to a state where *goal* holds; an error message if no known path exists."""
        path = nav.plan(self._level, self._known, goal)
        if path is None:
            return f"You cannot find a way to {what} through the cells you have seen."
        for action in path:
            self._primitive(action)
            if self._over:
                break
        return None

    def _go_to(self, target: Any) -> tuple[str, bool, bool]:
        name = f"the {target.label}"
        if nav.facing(target.pos)(*self._agent_state()):
            return f"You are already facing {name}.", False, True
        error = self._walk(nav.facing(target.pos), name)
        return (error, False, True) if error else (f"You went to {name}; it is right in front of you.", False, False)

    def _pick_up(self, target: Any) -> tuple[str, bool, bool]:
        carrying = self._level.carrying
        if not target.obj.can_pickup():
            return f"You cannot pick up the {target.label}; use 'open {target.label}' for doors.", False, True
        if carrying is not None:
            return f"You are already carrying a {carrying.color} {carrying.type}; drop it first.", False, True
        error = self._walk(nav.facing(target.pos), f"the {target.label}")
        if error or self._over:
            return error or f"You went to the {target.label}.", False, bool(error)
        return self._do_primitive(3)

    def _open(self, target: Any, verb: str) -> tuple[str, bool, bool]:
        obj, carrying = target.obj, self._level.carrying
        if obj.type not in ("door", "box"):
            return f"The {target.label} cannot be opened; only doors and boxes can.", False, True
        if verb != "toggle" and obj.type == "door" and obj.is_open:
            return f"The {target.label} is already open.", False, True
        if obj.type == "door" and obj.is_locked and not (carrying is not None and carrying.type == "key"
                                                          and carrying.color == obj.color):
            return f"The {target.label} is locked; you need to carry a {obj.color} key to open it.", False, True
        error = self._walk(nav.facing(target.pos), f"the {target.label}")
        if error or self._over:
            return error or f"You went to the {target.label}.", False, bool(error)
        return self._do_primitive(5)

    def _put_next_to(self, target: Any) -> tuple[str, bool, bool]:
        carrying = self._level.carrying
        if carrying is None:
            return "You are not carrying anything to put down.", False, True
        error = self._walk(nav.facing_free_cell_next_to(self._level, target.pos), f"a free cell next to the {target.label}")
        if error or self._over:
            return error or f"You went next to the {target.label}.", False, bool(error)
        message, invalid, failed = self._do_primitive(4)
        if not failed:
            message = f"You put the {carrying.color} {carrying.type} next to the {target.label}."
        return message, invalid, failed

    def _agent_state(self) -> tuple[int, int, int]:
        level = self._level
        return int(level.agent_pos[0]), int(level.agent_pos[1]), int(level.agent_dir)

    def _do_primitive(self, action: int) -> tuple[str, bool, bool]:
        """Run one minigrid action and say what happened (failed: it changed nothing)."""
        level = self._level
        before_pos, carrying = tuple(level.agent_pos), level.carrying
        front = level.grid.get(*level.front_pos)
        front_state = door_state(front) if front is not None else ""
        self._primitive(action)
        if action in (0, 1):
            return f"You turned {'left' if action == 0 else 'right'}.", False, False
        if action == 2:
            if tuple(level.agent_pos) != before_pos:
                return "You moved forward.", False, False
            return f"You cannot move forward: {_a(front)} is in the way.", False, True
        if action == 3:
            if level.carrying is not None and carrying is None:
                return f"You picked up the {front.color} {front.type}.", False, False
            if carrying is not None:
                return f"You are already carrying a {carrying.color} {carrying.type}; drop it first.", False, True
            return "There is nothing you can pick up right in front of you.", False, True
        if action == 4:
            if carrying is None:
                return "You are not carrying anything to drop.", False, True
            if level.carrying is None:
                return f"You dropped the {carrying.color} {carrying.type}.", False, False
            return f"You cannot drop here: {_a(front)} is right in front of you.", False, True
        if front is None or front.type not in ("door", "box"):
            return "There is nothing to toggle right in front of you.", False, True
        if front.type == "box":
            inside = level.grid.get(*level.front_pos)
            return f"You opened the {front.color} box" + (f"; it held {_a(inside)}." if inside else "; it was empty."), False, False
        after = door_state(front)
        if after == front_state:
            return f"The {front.color} door is locked; you need to carry a {front.color} key to open it.", False, True
        return f"You {'opened' if front.is_open else 'closed'} the {front.color} door.", False, False


def _a(obj: Any) -> str:
    if obj is None:
        return "nothing"
    return f"a {obj.color} {obj.type}" if obj.type != "wall" else "a wall"
