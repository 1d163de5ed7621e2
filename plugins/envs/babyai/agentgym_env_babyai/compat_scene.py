"""What AgentGym's babyai server makes of a view: its paragraph of text and its actions.

:func:`read_scene` reads the agent's observation image (minigrid's encoding) into a
:class:`Scene`: the description AgentGym writes ("There is a red ball 1 4 steps in front of
you ..."), the actions it accepts, each with the minigrid moves a breadth-first search over
the visible area expands it into (:func:`find_path`), and its messages for actions that are
not available. Quirks included; see :mod:`.compat`.
"""
from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

# minigrid's encoding of an observation image: object codes, colours, door states, directions
_KINDS = {2: "wall", 4: "door", 5: "key", 6: "ball", 7: "box", 8: "goal", 9: "lava"}
_COLORS = ("red", "green", "blue", "purple", "yellow", "grey")
_DOOR_STATES = ("open", "closed", "locked")
_DIRS = ((1, 0), (0, 1), (-1, 0), (0, -1))
_BLOCKING = ("wall", "box", "lava", "ball", "key")  # name parts a path may not cross
LEFT, RIGHT, FORWARD, PICKUP, DROP, TOGGLE = 0, 1, 2, 3, 4, 5


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
