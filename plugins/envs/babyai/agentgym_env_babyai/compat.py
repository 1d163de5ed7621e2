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

from typing import Any

# How AgentGym's server reads a view into text and numbered actions is in .compat_scene.
from .compat_scene import actions_line, read_scene

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

def task_of(data_idx: int) -> tuple[str, int]:
    """``(level, seed)`` of AgentGym's task *data_idx*."""
    if not isinstance(data_idx, int) or isinstance(data_idx, bool) or data_idx < 0:
        raise ValueError(f"BabyAI task ids are non-negative integers, got {data_idx!r}")
    return LEVELS[data_idx % len(LEVELS)], data_idx // len(LEVELS)


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
        from agentgym_core import agentgym_action

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
