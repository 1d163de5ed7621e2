"""What the agent sees, as data and as text: objects with positions relative to the agent.

Positions are egocentric: ``forward`` cells ahead and ``right`` cells to the right (negative:
left), read from minigrid's partially observable view (walls block the view).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

# minigrid's OBJECT_TO_IDX codes, as they appear in an observation image
_UNSEEN, _EMPTY, _WALL, _FLOOR, _DOOR, _GOAL = 0, 1, 2, 3, 4, 8
_SCENERY = (_EMPTY, _WALL, _FLOOR)
_OPEN_GROUND = (_EMPTY, _FLOOR, _GOAL)


@dataclass
class Seen:
    """One visible object: its action label ("red ball", "grey box 2"), cell and offset."""

    label: str
    obj: Any
    pos: tuple[int, int]
    forward: int
    right: int

    @property
    def distance(self) -> int:
        return abs(self.forward) + abs(self.right)

    def text(self) -> str:
        numbered = self.label[-1].isdigit()
        article = "" if numbered else ("an " if self.label[0] in "aeiou" else "a ")
        return f"{article}{self.label}{door_state(self.obj)}, {where(self.forward, self.right)}"


@dataclass
class View:
    """One look around: visible objects (nearest first), wall distances and visible cells."""

    objects: list[Seen]
    walls: dict[str, int]
    visible: list[tuple[int, int]]


def door_state(obj: Any) -> str:
    if obj.type != "door":
        return ""
    return " (locked)" if obj.is_locked else " (open)" if obj.is_open else " (closed)"


def where(forward: int, right: int) -> str:
    """``"2 steps forward and 1 step left"``; the cell ahead is ``"right in front of you"``."""
    if forward == 1 and right == 0:
        return "right in front of you"
    parts = []
    if forward:
        parts.append(f"{forward} step{'s' if forward != 1 else ''} forward")
    if right:
        n = abs(right)
        parts.append(f"{n} step{'s' if n != 1 else ''} {'right' if right > 0 else 'left'}")
    return " and ".join(parts) or "where you stand"


def look(level: Any, image: np.ndarray) -> View:
    """Read the agent's view from a minigrid env and the ``image`` of its last observation.

    The image is minigrid's egocentric encoding (agent at the bottom centre, facing up;
    object type 0 marks cells hidden from view), so no second pass over the grid is needed.
    """
    size = image.shape[0]
    ax, ay = size // 2, size - 1
    px, py = int(level.agent_pos[0]), int(level.agent_pos[1])
    (fx, fy), (rx, ry) = (int(v) for v in level.dir_vec), (int(v) for v in level.right_vec)
    types = image[:, :, 0]
    found: list[tuple[int, int, Any, tuple[int, int]]] = []
    visible: list[tuple[int, int]] = []
    for i, j in zip(*np.nonzero(types)):
        forward, right = ay - int(j), int(i) - ax
        x, y = px + forward * fx + right * rx, py + forward * fy + right * ry
        if not (0 <= x < level.width and 0 <= y < level.height):
            continue
        visible.append((x, y))
        if (forward, right) == (0, 0) or types[i, j] in _SCENERY:
            continue
        cell = level.grid.get(x, y)
        if cell is not None:
            found.append((forward, right, cell, (x, y)))
    found.sort(key=lambda f: (abs(f[0]) + abs(f[1]), f[0], f[1]))
    groups: dict[str, int] = defaultdict(int)
    for _, _, cell, _ in found:
        groups[f"{cell.color} {cell.type}"] += 1
    counters: dict[str, int] = defaultdict(int)
    objects = []
    for forward, right, cell, xy in found:
        name = f"{cell.color} {cell.type}"
        counters[name] += 1
        label = f"{name} {counters[name]}" if groups[name] > 1 else name
        objects.append(Seen(label, cell, xy, forward, right))

    def ray(di: int, dj: int) -> int | None:
        for n in range(1, size):
            i, j = ax + di * n, ay + dj * n
            if not (0 <= i < size and 0 <= j < size) or types[i, j] == _UNSEEN:
                return None
            if types[i, j] == _WALL:
                return n
            if types[i, j] not in _OPEN_GROUND and not (types[i, j] == _DOOR and image[i, j, 2] == 0):
                return None  # an object or a closed door hides what is behind
        return None

    walls = {}
    for direction, (di, dj) in (("forward", (0, -1)), ("left", (-1, 0)), ("right", (1, 0))):
        n = ray(di, dj)
        if n is not None:
            walls[direction] = n
    return View(objects, walls, visible)


def describe(view: View, carrying: Any) -> str:
    """The view as text: objects one per line, then walls and what the agent carries."""
    lines = []
    if view.objects:
        lines.append("You see:")
        lines.extend(f"- {seen.text()}" for seen in view.objects)
    else:
        lines.append("You see no objects.")
    if view.walls:
        parts = [f"{n} step{'s' if n != 1 else ''} {d}" for d, n in view.walls.items()]
        lines.append("Walls: " + ", ".join(parts) + ".")
    if carrying is not None:
        lines.append(f"You are carrying a {carrying.color} {carrying.type}.")
    else:
        lines.append("You are carrying nothing.")
    return "\n".join(lines)
