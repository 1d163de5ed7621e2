"""``compat: agentgym``: the tasks, text, actions and rewards of AgentGym's babyai server.

AgentGym's server (``agentenv-babyai`` in WooooDyy/AgentGym) plays task ``data_idx`` as level
``idx % 40 + 1`` of its 40-level list with seed ``idx // 40``. It describes the view in one
paragraph ("There is a red ball 1 4 steps in front of you and 3 steps to your right."), ends
every observation with ``Available actions: [...]``, and accepts exactly those actions ("go to
red ball 1", "pickup grey key 1", "go through blue open door 1", "toggle and go through red
closed door 1", "toggle", "drop", "go to goal", the primitive moves, "check available
actions"), each expanded into minigrid moves by a breadth-first search over the visible area.
Its reward is minigrid's own (``1 - 0.9 * moves / max_steps``), and an episode is done only
when that reward exceeds 0.5.

This module behaves the same way, quirks included (path search, numbering, messages), written
from a reading of that server; tests compare it with answers recorded from AgentGym's code.
"""
from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

#: AgentGym's level list, in its order (its level k is ``LEVELS[k - 1]``).
LEVELS = (
    "GoToRedBallGrey", "GoToRedBall", "GoToRedBallNoDists", "GoToObjS6", "GoToLocalS8N7",
    "GoToObjMazeS7", "GoToImpUnlock", "GoToSeqS5R2", "GoToRedBlueBall", "GoToDoor",
    "GoToObjDoor", "Open", "OpenRedDoor", "OpenDoorLoc", "OpenRedBlueDoorsDebug",
    "OpenDoorsOrderN4Debug", "Pickup", "UnblockPickup", "PickupLoc", "PickupDistDebug",
    "PickupAbove", "PutNextLocalS6N4", "PutNextS7N4Carrying", "Unlock", "UnlockLocalDist",
    "KeyInBox", "UnlockPickupDist", "BlockedUnlockPickup", "UnlockToUnlock", "ActionObjDoor",
    "FindObjS7", "KeyCorridorS6R3", "OneRoomS20", "MoveTwoAcrossS8N9", "SynthS5R2",
    "SynthLoc", "SynthSeq", "MiniBossLevel", "BossLevel", "BossLevelNoUnlock",
)
#: AgentGym pins minigrid < 2.5, whose ``BabyAI-GoToObjS6-v0`` was registered with room_size 4
#: (minigrid 3 dropped it for a ``-v1`` with room_size 6): the level it plays is GoToObjS4's.
BUILT_AS = {"GoToObjS6": "GoToObjS4"}

# minigrid's encoding of an observation image: object codes, colours, door states, directions
_KINDS = {2: "wall", 4: "door", 5: "key", 6: "ball", 7: "box", 8: "goal", 9: "lava"}
_COLORS = ("red", "green", "blue", "purple", "yellow", "grey")
_DOOR_STATES = ("open", "closed", "locked")
_DIRS = ((1, 0), (0, 1), (-1, 0), (0, -1))
_BLOCKING = ("wall", "box", "lava", "ball", "key")  # name parts a path may not cross
LEFT, RIGHT, FORWARD, PICKUP, DROP, TOGGLE = 0, 1, 2, 3, 4, 5


def task_of(data_idx: int) -> tuple[str, int]:
    """``(level, seed)`` of AgentGym's task *data_idx*."""
    if not isinstance(data_idx, int) or isinstance(data_idx, bool) or data_idx < 0:
        raise ValueError(f"BabyAI task ids are non-negative integers, got {data_idx!r}")
    return LEVELS[data_idx % len(LEVELS)], data_idx // len(LEVELS)


@dataclass
class Thing:
    """One visible cell of interest: ``name`` ("red ball", "blue closed door", "grey wall")."""

    name: str
    pos: tuple[int, int]
    dist: int  # Manhattan distance from the agent (for barriers: cells straight ahead)


@dataclass
class Scene:
    """What one look gives: the description and the actions (name -> minigrid moves) with errors."""

    text: str
    actions: dict[str, list[int]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


def read_scene(level: Any, image: Any) -> Scene:
    """Describe the agent's view and list the actions it allows, as AgentGym's server does."""
    px, py = int(level.agent_pos[0]), int(level.agent_pos[1])
    d = int(level.agent_dir)
    (fx, fy), (rx, ry) = _DIRS[d], _DIRS[(d + 1) % 4]
    size = int(level.agent_view_size)
    # the view's far-left corner, and the (lopsided) coordinate ranges AgentGym searches paths in
    left_x, left_y = px + fx * (size - 1) - rx * (size // 2), py + fy * (size - 1) - ry * (size // 2)
    far_x, far_y = left_x + size * (rx - fx), left_y + size * (ry - fy)
    xs = range(far_x, left_x + 1) if far_x < left_x else range(left_x, far_x)
    ys = range(far_y, left_y + 1) if far_y < left_y else range(left_y, far_y)
    things, barriers = [], []
    for j in range(size):
        for i in range(size):
            x, y = left_x - fx * j + rx * i, left_y - fy * j + ry * i
            dist = abs(px - x) + abs(py - y)
            kind = _KINDS.get(int(image[i, j, 0]))
            if x < 0 or y < 0 or dist == 0 or kind is None:
                continue
            color = _COLORS[int(image[i, j, 1])]
            name = f"{color} {_DOOR_STATES[int(image[i, j, 2])]} door" if kind == "door" else f"{color} {kind}"
            things.append(Thing(name, (x, y), dist))
            dx, dy = x - px, y - py
            if kind in ("box", "wall") and fx * dy - fy * dx == 0:  # straight ahead
                barriers.append(Thing(kind, (x, y), fx * dx + fy * dy))
    things.sort(key=lambda t: t.dist)
    barriers.sort(key=lambda t: t.dist)
    scene = Scene(_describe(things, barriers, (px, py), d, level.carrying))
    _add_actions(scene, things, barriers, (px, py), d, level.carrying, xs, ys)
    return scene


def _describe(things: list[Thing], barriers: list[Thing], pos: tuple[int, int], d: int, carrying: Any) -> str:
    (fx, fy), (rx, ry) = _DIRS[d], _DIRS[(d + 1) % 4]
    if things:
        text = "In front of you in this room, you can see several objects: "
        seen: Counter[str] = Counter()
        for thing in things:
            if "wall" in thing.name:
                continue
            dx, dy = thing.pos[0] - pos[0], thing.pos[1] - pos[1]
            ahead, right = fx * dx + fy * dy, rx * dx + ry * dy
            if right == 0:
                where = f"right in front of you {ahead} steps away. "
            else:
                side = "right" if right > 0 else "left"
                where = f"{ahead} steps in front of you and {abs(right)} steps to your {side}. "
            seen[thing.name] += 1
            text += f"There is a {thing.name} {seen[thing.name]} {where} "
    else:
        text = "You cannot see any objects within sight."
    text += "The room has walls around you. "
    if barriers:
        text += f"You are facing a {barriers[0].name} {barriers[0].dist} steps away. "
    if carrying is not None:
        return text + f"You are carrying a {carrying.color} {carrying.type}."
    return text + "You are not carrying anything."


def _add_actions(scene: Scene, things: list[Thing], barriers: list[Thing], pos: tuple[int, int], d: int,
                 carrying: Any, xs: range, ys: range) -> None:
    actions, errors = scene.actions, scene.errors
    blocked = {t.pos for t in things if any(word in t.name for word in _BLOCKING)}

    def path_to(goal: tuple[int, int], arrive: bool) -> list[int] | None:
        return find_path(pos, d, goal, blocked, xs, ys, arrive=arrive)

    actions["turn left"], actions["turn right"] = [LEFT], [RIGHT]
    if not barriers or barriers[0].dist > 1:
        actions["move forward"] = [FORWARD]
    else:
        errors["move forward"] = "There is a barrier in front of you, you can't move forward."
    if carrying is None:
        _numbered(scene, "pickup", [t for t in things if not any(w in t.name for w in ("wall", "door", "goal"))],
                  path_to, tail=[PICKUP])
        errors["drop"] = "You cannot drop the object, as you are not carrying anything."
    else:
        ahead = (pos[0] + _DIRS[d][0], pos[1] + _DIRS[d][1])
        if ahead in {t.pos for t in things if any(word in t.name for word in _BLOCKING)}:
            errors["drop"] = "You cannot drop the object, as there is already an object in front of you."
        else:
            actions["drop"] = [DROP]
    _add_door_actions(scene, things, carrying, path_to)
    for thing in things:
        if "goal" in thing.name:
            path = path_to(thing.pos, True)
            if path is not None:
                actions["go to goal"] = path
            else:
                errors["go to goal"] = "You cannot go to the goal, as there is no path leading to it."
    _numbered(scene, "go to", [t for t in things if "wall" not in t.name and "goal" not in t.name], path_to)
    actions["check available actions"] = []


def _numbered(scene: Scene, verb: str, things: list[Thing], path_to: Any, tail: list[int] | None = None) -> None:
    """``"<verb> <name> <n>"`` for each reachable thing, numbered per name in order (an
    unreachable one gets an error under the number the next reachable one would take)."""
    count: dict[str, int] = {}
    for thing in things:
        path = path_to(thing.pos, False)
        first = f"{verb} {thing.name} 1"
        if path is not None:
            count[thing.name] = 1 if first not in scene.actions else count[thing.name] + 1
            scene.actions[f"{verb} {thing.name} {count[thing.name]}"] = path + (tail or [])
        else:
            label = f"{thing.name} {1 if first not in scene.actions else count[thing.name] + 1}"
            scene.errors[f"{verb} {label}"] = f"You cannot {verb} {label}, as there is no path leading to it."


def _add_door_actions(scene: Scene, things: list[Thing], carrying: Any, path_to: Any) -> None:
    actions, errors = scene.actions, scene.errors
    count: dict[str, int] = {}
    for thing in things:
        if "door" in thing.name:
            count[thing.name] = count.get(thing.name, 0) + 1
        label = f"{thing.name} {count.get(thing.name)}"
        if "open door" in thing.name:
            path = path_to(thing.pos, True)
            if path is not None:
                actions[f"go through {label}"] = path
            else:
                errors[f"go through {label}"] = f"You cannot go through {label}, as there is no path leading to it."
            continue
        if "locked door" in thing.name:
            why = None
            if carrying is None or carrying.type != "key":
                why = "as you are not carrying a key"
            elif carrying.color != thing.name.split(" ")[0]:
                why = "as the color of the key you are carrying does not match the color of door"
            if why:
                errors[f"toggle and go through {label}"] = f"You cannot toggle and go through {label}, {why}."
                continue
        elif "closed door" not in thing.name:
            continue
        path = path_to(thing.pos, False)
        if path is not None:
            actions[f"toggle and go through {label}"] = path + [TOGGLE, FORWARD]
        else:  # AgentGym names the door by its whole counter here (a dict), not its number
            errors[f"toggle and go through {label}"] = (f"You cannot toggle and go through {thing.name} {count}, "
                                                         "as there is no path leading to it.")
        if path == []:
            actions["toggle"] = [TOGGLE]
        if "closed door" in thing.name:
            errors[f"go through {label}"] = f"You cannot go through {label}, as it is closed. You should toggle it first."


def find_path(start: tuple[int, int], direction: int, goal: tuple[int, int], blocked: set[tuple[int, int]],
              xs: range, ys: range, *, arrive: bool) -> list[int] | None:
    """Moves (left, right, forward) until the agent faces *goal* (stands on it with *arrive*).

    Breadth-first over (cell, direction) states within *xs* x *ys*, never into *blocked* cells;
    like AgentGym's search, a state is marked visited when it is taken from the queue and the
    last push of a state sets its parent, which decides which of several shortest paths is used.
    """
    queue = deque([(start, direction)])
    visited: set[tuple[tuple[int, int], int]] = set()
    parent: dict[tuple[tuple[int, int], int], tuple[tuple[tuple[int, int], int], int]] = {}
    while queue:
        state = queue.popleft()
        visited.add(state)
        (x, y), d = state
        dx, dy = _DIRS[d]
        if (x, y) == goal if arrive else (goal[0] - x, goal[1] - y) == (dx, dy):
            path = []
            while state != (start, direction):
                state, move = parent[state]
                path.append(move)
            return path[::-1]
        for move, nxt in ((FORWARD, ((x + dx, y + dy), d)), (LEFT, ((x, y), (d - 1) % 4)), (RIGHT, ((x, y), (d + 1) % 4))):
            (nx, ny), _ = nxt
            if nx not in xs or ny not in ys or nxt in visited or (nx, ny) in blocked:
                continue
            queue.append(nxt)
            parent[nxt] = (state, move)
    return None


def actions_line(actions: dict[str, list[int]]) -> str:
    """The ``Available actions`` line AgentGym appends to every observation."""
    return "\nAvailable actions: [" + ", ".join(f'"{name}"' for name in actions) + "]"


def build_level(name: str, make_level: Any) -> Any:
    """The minigrid level AgentGym plays for *name*, with minigrid < 2.5's mission generation.

    minigrid 3 forgets a ``LevelGen`` level's locked room before generating each mission; the
    minigrid AgentGym pins keeps the room of the previous attempt (a rejected one, or the reset
    before), which changes the mission of about 1 in 1,000 ``Synth*`` tasks. Such levels get a
    ``locked_room`` that ignores being cleared, as in minigrid < 2.5.
    """
    level = make_level(BUILT_AS.get(name, name))
    if hasattr(level, "locked_room_prob"):
        kept = level.__dict__.pop("locked_room", None)
        level.__class__ = _keeping_locked_room(type(level))
        level.__dict__[_KEPT] = kept
    return level


_KEPT = "_agentgym_locked_room"


def _get_locked_room(level: Any) -> Any:
    return level.__dict__.get(_KEPT)


def _set_locked_room(level: Any, room: Any) -> None:
    if room is not None or _KEPT not in level.__dict__:
        level.__dict__[_KEPT] = room


_KEEPING: dict[type, type] = {}


def _keeping_locked_room(cls: type) -> type:
    if cls not in _KEEPING:
        _KEEPING[cls] = type(cls.__name__, (cls,), {"locked_room": property(_get_locked_room, _set_locked_room)})
    return _KEEPING[cls]


class AgentGymEpisode:
    """One episode on a built minigrid level, answering as AgentGym's server does."""

    def __init__(self, level: Any, name: str, seed: int) -> None:
        self.level, self.name = level, name
        if _KEPT in level.__dict__:  # AgentGym builds a fresh level and resets it twice
            level.__dict__[_KEPT] = None
            level.reset(seed=seed)
        obs, _ = level.reset(seed=seed)
        self.goal = level.mission.replace("then", "and").replace("after you", "and")
        self.image = obs["image"]
        self.scene = read_scene(level, self.image)
        self.state = self.scene.text  # the latest text, before the actions line
        self.reward, self.score, self.done = 0.0, 0.0, False

    def first_observation(self) -> str:
        return self.full_observation()

    def full_observation(self) -> str:
        """``GET /observation``'s text: the goal, the latest text and the actions line."""
        return f"Your goal: {self.goal}\n{self.state}{actions_line(self.scene.actions)}"

    def step(self, raw: str) -> tuple[str, float, bool, dict[str, Any]]:
        action = raw.lower().strip()
        start = self.level.step_count
        valid = True
        if "check" in action:
            self.state = "You can take the following actions: " + ", ".join(self.scene.actions)
        elif action not in self.scene.actions:
            valid = False
            self.state = ("No change in state." if action == "" else self.scene.errors.get(
                action, "The action is not recognized. Please check valid actions."))
        elif not self.scene.actions[action]:  # "go to" an object already right in front
            self.state = "No change in state."
        else:
            self._run(self.scene.actions[action])
        self.score += self.reward
        info = {"success": self.done, "invalid_action": not valid, "action_failed": False, "level": self.name,
                "moves": self.level.step_count - start}
        return self.state + actions_line(self.scene.actions), self.reward, self.done, info

    def _run(self, moves: list[int]) -> None:
        """Play *moves*, stopping after one that changes nothing in view; then look again."""
        for move in moves:
            obs, reward, terminated, _, _ = self.level.step(move)
            if (obs["image"] == self.image).all():
                break
            self.image = obs["image"]
        self.image = obs["image"]
        self.scene = read_scene(self.level, obs["image"])
        self.state = self.scene.text + ("\n The task is completed." if terminated else "")
        self.reward = float(reward)
        self.done = bool(terminated) and self.reward > 0.5  # a late success (reward <= 0.5) goes on
        if self.reward == 1 and not self.done:  # never with minigrid's discounted reward; AgentGym checks it
            self.done = True
            self.state += "\n The task is completed."


INSTRUCTION = """\
You are an agent in a BabyAI grid world: rooms with walls, doors and objects (balls, boxes \
and keys, each with a colour). Doors are open, closed or locked; a locked door opens only \
while you carry a key of its colour. You can carry one object. The first observation gives \
your goal. Each observation says what you see, numbering objects of one kind nearest first \
("There is a grey key 1 2 steps in front of you and 1 steps to your left."), what you carry, \
and ends with the actions available now: Available actions: [...].

Actions (one per turn, written exactly as in the list of available actions):
- turn left / turn right / move forward
- go to <object> <number>: walk up to an object, e.g. "go to red ball 1"; doors are named \
with their state, e.g. "go to blue closed door 1"
- pickup <object> <number>: walk to an object and pick it up, e.g. "pickup grey key 1"
- go through <door> <number>: walk through an open door, e.g. "go through red open door 1"
- toggle and go through <door> <number>: open a closed door (or a locked one while carrying \
its key) and walk through it
- toggle: open or close the door right in front of you
- drop: put down what you carry
- go to goal: walk onto the goal square
- check available actions: list the actions you can take

Answer in this format:
Thought: <your reasoning>
Action: <one action>"""

BRIEF_INSTRUCTION = (
    "You are in a grid world with coloured balls, boxes, keys and doors. Each observation gives "
    "your goal, what you see, and ends with \"Available actions: [...]\". Reply with exactly one "
    "of the available actions, e.g. \"go to red ball 1\"."
)


class AgentGymBabyAI:
    """The ``babyai`` env's AgentGym mode: task ids, splits, episodes and wire fields."""

    def __init__(self, train_seeds: int, test_seeds: int) -> None:
        self.train_seeds, self.test_seeds = train_seeds, test_seeds
        self.built: dict[str, Any] = {}
        self.episode: AgentGymEpisode | None = None

    def splits(self) -> dict[str, list[int]]:
        """AgentGym's ids of the first *train_seeds* seeds (all 40 levels) for training, the next
        *test_seeds* seeds held out: ``train = [0, 40 * train_seeds)``, test the ids after."""
        k = len(LEVELS)
        return {"train": list(range(k * self.train_seeds)),
                "test": list(range(k * self.train_seeds, k * (self.train_seeds + self.test_seeds)))}

    def reset(self, task_id: int, make_level: Any) -> str:
        name, seed = task_of(task_id)
        if name not in self.built:
            self.built[name] = build_level(name, make_level)
        self.episode = AgentGymEpisode(self.built[name], name, seed)
        return self.episode.first_observation()

    def step(self, action: str) -> tuple[str, float, bool, dict[str, Any]]:
        from agentgym_core.env.text import agentgym_action

        episode = self.episode
        if episode is None:
            raise RuntimeError("BabyAIEnv.step() called before reset(); reset a task first")
        if episode.done:
            return ("The episode is over; reset to start a new task.", 0.0, True,
                    {"success": True, "invalid_action": True, "action_failed": False, "level": episode.name,
                     "moves": 0})
        return episode.step(agentgym_action(action))

    def wire_fields(self, call: str) -> dict[str, Any] | None:
        """AgentGym's extra answer fields: ``deleted`` on reset; ``GET /observation`` as an object."""
        episode = self.episode
        if call == "reset":
            return {"deleted": False}
        if call == "observation" and episode is not None:
            return {"observation": episode.full_observation(), "reward": episode.reward, "score": episode.score,
                    "done": episode.done, "deleted": False}
        return None

    def close(self) -> None:
        for level in self.built.values():
            level.close()
        self.built.clear()
        self.episode = None
