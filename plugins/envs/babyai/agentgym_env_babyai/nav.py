"""Resolving an object named in an action, and planning primitive moves to reach it.

Planning is a breadth-first search over (cell, direction) states through cells the agent
has already seen, so a high-level action never uses knowledge the agent could not have.
"""
from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from .view import Seen

_OBJECT = re.compile(
    r"^(?:(?P<color>red|green|blue|purple|yellow|grey|gray)\s+)?(?P<type>ball|box|key|door|goal)s?"
    r"(?:\s+(?:number\s+)?#?(?P<index>\d+))?$"
)
# minigrid's DIR_TO_VEC: 0 east (+x), 1 south (+y), 2 west, 3 north.
_DIRS = ((1, 0), (0, 1), (-1, 0), (0, -1))
LEFT, RIGHT, FORWARD = 0, 1, 2


def parse_object(text: str) -> tuple[str | None, str, int | None] | None:
    """``"the red ball 2"`` -> ``("red", "ball", 2)``; None if it does not name an object."""
    text = re.sub(r"^(?:the|a|an)\s+", "", text.strip())
    text = re.sub(r"\s*\((?:open|closed|locked)\)", "", text)  # "blue door (locked)"
    m = _OBJECT.match(text)
    if not m:
        return None
    color = m.group("color")
    color = "grey" if color == "gray" else color
    index = int(m.group("index")) if m.group("index") else None
    return color, m.group("type"), index


def resolve(objects: list[Seen], color: str | None, kind: str, index: int | None) -> Seen | None:
    """The visible object an action names: the numbered one if a number is given, else the nearest."""
    matches = [s for s in objects if s.obj.type == kind and (color is None or s.obj.color == color)]
    if index is not None:
        wanted = [s for s in matches if s.label.endswith(f" {index}")]
        if wanted:
            return wanted[0]
        # "red ball 1" when only one red ball is visible (so it is unnumbered)
        return matches[0] if index == 1 and len(matches) == 1 else None
    return matches[0] if matches else None


def passable(cell: Any) -> bool:
    return cell is None or (cell.can_overlap() and cell.type != "lava")


def plan(level: Any, known: np.ndarray, goal: Callable[[int, int, int], bool]) -> list[int] | None:
    """Shortest list of primitive actions (left/right/forward) reaching a state where *goal* holds.

    *goal(x, y, d)* is tested on the agent's cell and direction; *known* marks the cells the
    agent has seen, the only ones a path may cross.
    """
    start = (int(level.agent_pos[0]), int(level.agent_pos[1]), int(level.agent_dir))
    if goal(*start):
        return []
    parents: dict[tuple[int, int, int], tuple[tuple[int, int, int], int]] = {}
    queue = deque([start])
    seen = {start}
    while queue:
        state = queue.popleft()
        x, y, d = state
        dx, dy = _DIRS[d]
        moves = [((x, y, (d - 1) % 4), LEFT), ((x, y, (d + 1) % 4), RIGHT)]
        nx, ny = x + dx, y + dy
        if 0 <= nx < level.width and 0 <= ny < level.height and known[nx, ny] and passable(level.grid.get(nx, ny)):
            moves.insert(0, ((nx, ny, d), FORWARD))
        for nxt, action in moves:
            if nxt in seen:
                continue
            seen.add(nxt)
            parents[nxt] = (state, action)
            if goal(*nxt):
                path = []
                while nxt != start:
                    nxt, act = parents[nxt]
                    path.append(act)
                return path[::-1]
            queue.append(nxt)
    return None


def facing(target: tuple[int, int]) -> Callable[[int, int, int], bool]:
    """Goal: the agent faces *target* (it is the cell right in front)."""
    tx, ty = target

    def goal(x: int, y: int, d: int) -> bool:
        dx, dy = _DIRS[d]
        return (x + dx, y + dy) == (tx, ty)

    return goal


def facing_free_cell_next_to(level: Any, target: tuple[int, int]) -> Callable[[int, int, int], bool]:
    """Goal: the cell in front is empty and next to *target* (where a drop puts things)."""
    tx, ty = target

    def goal(x: int, y: int, d: int) -> bool:
        dx, dy = _DIRS[d]
        fx, fy = x + dx, y + dy
        if abs(fx - tx) + abs(fy - ty) != 1:
            return False
        return 0 <= fx < level.width and 0 <= fy < level.height and level.grid.get(fx, fy) is None

    return goal
