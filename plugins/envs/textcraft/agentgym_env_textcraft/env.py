"""``TextCraftEnv``: craft a Minecraft item from a list of crafting commands.

Rules follow TextCraft (ADaPT): base items are fetched with ``get``, everything else is
crafted with exactly the ingredients of one recipe; a recipe input such as "planks" is a
type that any specific kind ("oak planks") satisfies. Task ids: ``goal = goals[task_id %
len(goals)]`` (see :mod:`.catalog`), and ``task_id`` seeds which distractor recipes are shown.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from agentgym_core import BaseEnv, ConfigError, agentgym_action, config_from, normalize_action

from . import compat as agentgym
from .catalog import Catalog, Recipe, item_id, item_name, load_catalog

INSTRUCTION = """\
You are crafting items in Minecraft. The first observation lists crafting commands and a \
goal item; craft the goal. Use only the crafting commands given, with exactly their \
ingredients and counts. When a command names a general ingredient type such as "planks", \
use a specific kind of it instead, e.g. "oak planks".

Actions (one per turn):
- get <count> <item>: fetch a base ingredient, e.g. "get 1 oak log"; items that have a \
crafting command cannot be fetched, craft them
- craft <count> <item> using <count> <item>, <count> <item>, ...: craft with items in your \
inventory, e.g. "craft 4 oak planks using 1 oak log"
- inventory: list what you carry

Answer in this format:
Thought: <your reasoning>
Action: <one action>"""

VALID = ("get <count> <item>, craft <count> <item> using <count> <item>, ... "
         "(ingredients separated by commas), inventory")
_CRAFT = re.compile(r"^craft (?:(?P<n>\d+) )?(?P<item>.+?) using (?P<inputs>.+)$")
_ACTION_MARK = re.compile(r"action\s*:", re.IGNORECASE)
_GET = re.compile(r"^(?:get|fetch|take) (?:(?P<n>\d+) )?(?P<item>.+)$")
_COUNTED = re.compile(r"^(?P<n>\d+) (?P<item>.+)$")
_INVENTORY = ("inventory", "check inventory", "inv", "show inventory")


def command_line(action: str) -> str:
    """The command in a reply, normalised: the text after its last ``Action:`` when it has one, else
    the first line that reads as a command (``get``, ``craft``, ``inventory``), else its first line
    (which the env then refuses).

    Small models often copy the observation's ``Crafting commands:`` header before the command
    (``agent.action_format: free`` sends the whole reply), so the first line alone would be refused.
    """
    text = str(action)
    if not _ACTION_MARK.search(text):
        for line in text.splitlines():
            line = normalize_action(line)
            if line in _INVENTORY or _CRAFT.match(line) or _GET.match(line):
                return line
    return normalize_action(text)


@dataclass
class TextCraftConfig:
    """Options of the ``textcraft`` env (the ``env`` section of a run config)."""

    #: Goals are items needing at least this many crafting levels (AgentGym uses 2).
    min_depth: int = 2
    #: Distractor recipes shown next to the needed ones.
    max_distractors: int = 10
    #: ``none``: this env's goals and rules. ``agentgym``: AgentGym's textcraft server's (its
    #: goal for each ``data_idx``, its crafting rules and messages); see docs/envs.md.
    compat: str = "none"

    def __post_init__(self) -> None:
        _check_compat(self.compat)
        if int(self.min_depth) < 1:
            raise ConfigError(f"env.min_depth must be >= 1, got {self.min_depth}")
        if int(self.max_distractors) < 0:
            raise ConfigError(f"env.max_distractors must be >= 0, got {self.max_distractors}")


class TextCraftEnv(BaseEnv):
    """TextCraft: fetch base ingredients and craft the goal item through intermediate items."""

    instruction = INSTRUCTION
    action_format = "react"
    Config = TextCraftConfig

    def __init__(self, **options: Any) -> None:
        super().__init__()
        self.config = config_from(self, options)
        self.catalog: Catalog = load_catalog(int(self.config.min_depth))
        #: AgentGym mode: its goals ``(item id, depth)`` in data_idx order (None: this env's own)
        self.agentgym_goals: tuple[tuple[str, int], ...] | None = None
        if self.config.compat == "agentgym":
            self.catalog, self.agentgym_goals = agentgym.load()
            self.instruction = agentgym.INSTRUCTION
        self.max_distractors = int(self.config.max_distractors)
        self.goal: str | None = None
        self.inventory: dict[str, int] = {}
        self.commands: list[str] = []
        self._over = True
        self._success = False

    # -- self-description -------------------------------------------------------------------
    def splits(self) -> dict[str, Any]:
        if self.agentgym_goals is not None:  # every fifth of AgentGym's ids held out, as this env's own rule
            ids = range(len(self.agentgym_goals))
            return {"train": [i for i in ids if i % 5 != 4], "test": [i for i in ids if i % 5 == 4]}
        c = self.catalog
        return {"train": range(c.n_train), "test": range(c.n_train, len(c.goals))}

    def goal_of(self, task_id: int) -> str:
        """The goal item id of *task_id*."""
        if not isinstance(task_id, int) or isinstance(task_id, bool) or task_id < 0:
            raise ValueError(f"TextCraft task ids are non-negative integers, got {task_id!r}")
        if self.agentgym_goals is not None:
            return self.agentgym_goals[task_id % len(self.agentgym_goals)][0]
        return self.catalog.goals[task_id % len(self.catalog.goals)]

    def category(self, task_id: int) -> str:
        if self.agentgym_goals is not None:
            self.goal_of(task_id)  # checks the id
            return f"depth{self.agentgym_goals[task_id % len(self.agentgym_goals)][1]}"
        return f"depth{self.catalog.depth(self.goal_of(task_id))}"

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info["task_ids"] = "goal = goals[task_id % len(goals)]; goals by (depth, name), every 5th held out"
        info["goals"] = len(self.catalog.goals)
        if self.agentgym_goals is not None:
            info["compat"] = "agentgym"
            info["task_ids"] = "AgentGym's: goal = items of depth >= 1 sorted by depth[task_id % 544]; every 5th held out"
            info["goals"] = len(self.agentgym_goals)
        return info

    # -- the episode ------------------------------------------------------------------------
    def reset(self, *, task_id: int | None = None, seed: int | None = None) -> str:
        """Start *task_id*; without one, a random training task (drawn with *seed*)."""
        if task_id is None:
            task_id = random.Random(seed).choice(self.splits()["train"])
        self.goal = self.goal_of(task_id)
        self.commands = self.catalog.commands(self.goal, random.Random(task_id), self.max_distractors)
        self.inventory = {}
        self._over, self._success = False, False
        return "Crafting commands:\n{}\n\nGoal: craft {}.".format("\n".join(self.commands), item_name(self.goal))

    def step(self, action: str) -> tuple[str, float, bool, dict]:
        if self.goal is None:
            raise RuntimeError("TextCraftEnv.step() called before reset(); reset a task first")
        if self._over:
            return "The episode is over; reset to start a new task.", 0.0, True, self._info(True, False)
        if self.agentgym_goals is not None:
            obs, self._success, invalid, failed = agentgym.step(self.catalog, self.inventory, self.goal,
                                                                agentgym_action(action))
            self._over = self._success
            return obs, float(self._success), self._over, self._info(invalid, failed)
        text = command_line(action)
        invalid = failed = False
        if text in _INVENTORY:
            obs = self._inventory_text()
        elif m := _CRAFT.match(text):
            obs, failed = self._craft(m.group("item"), m.group("inputs"))
        elif m := _GET.match(text):
            obs, failed = self._get(int(m.group("n") or 1), m.group("item"))
        else:
            obs, invalid = f"Invalid action {str(action).strip()[:80]!r}. Valid actions: {VALID}.", True
        reward = 1.0 if self._success else 0.0
        return obs, reward, self._over, self._info(invalid, failed)

    # -- actions ----------------------------------------------------------------------------
    def _get(self, count: int, name: str) -> tuple[str, bool]:
        ident = item_id(name)
        catalog = self.catalog
        if count < 1:
            return f"Could not get {count} {name}: the count must be at least 1.", True
        if ident in catalog.tags:
            shown = "\n".join(self.commands)
            kinds = sorted((item_name(i) not in shown, item_name(i)) for i, t in catalog.tag_of.items() if t == ident)
            kinds = [k for _, k in kinds[:3]]
            example = f" such as {' or '.join(kinds)}" if kinds else ""
            return f"Could not find {name}: it is a type of ingredient; get or craft a specific kind{example}.", True
        if catalog.recipes(ident):
            return f"Could not find {name}: it has a crafting command, so craft it instead.", True
        if not catalog.fetchable(ident):
            return f"Could not find {name}: it is not a known item.", True
        self.inventory[ident] = self.inventory.get(ident, 0) + count
        return f"Got {count} {name}", False

    def _craft(self, target: str, inputs_text: str) -> tuple[str, bool]:
        ident = item_id(target)
        recipes = self.catalog.by_item.get(ident)
        if not recipes:
            return f"Could not find a valid recipe for {target}: no crafting command makes it.", True
        given: list[tuple[int, str]] = []
        for part in inputs_text.split(","):
            m = _COUNTED.match(part.strip())
            if not m:
                return f"Wrong item format: {part.strip()!r}; write each ingredient as '<count> <item>'.", True
            given.append((int(m.group("n")), item_id(m.group("item"))))
        missing = [f"{n} {item_name(i)}" for n, i in given if self.inventory.get(i, 0) < n]
        if missing:
            return (f"Could not find enough items to craft {target}: missing {', '.join(missing)}. "
                    f"{self._inventory_text()}"), True
        recipe = next((r for r in recipes if self._fits(r, given)), None)
        if recipe is None:
            return (f"Could not find a valid recipe for {target} using {inputs_text}: use the ingredients "
                    "and counts of one of the crafting commands."), True
        for n, i in given:
            self.inventory[i] -= n
            if self.inventory[i] == 0:
                del self.inventory[i]
        self.inventory[recipe.output] = self.inventory.get(recipe.output, 0) + recipe.count
        if recipe.output == self.goal:
            self._over = self._success = True
        return f"Crafted {recipe.count} {item_name(recipe.output)}", False

    def _fits(self, recipe: Recipe, given: list[tuple[int, str]]) -> bool:
        """Whether *given* is exactly the recipe's ingredients (types matched by kind)."""
        if len(given) != len(recipe.inputs):
            return False
        left = list(given)
        for count, required in recipe.inputs:
            match = next((g for g in left if g[0] == count and self.catalog.matches(required, g[1])), None)
            if match is None:
                return False
            left.remove(match)
        return True

    def _inventory_text(self) -> str:
        if not self.inventory:
            return "Inventory: You are not carrying anything."
        return "Inventory: " + " ".join(f"[{item_name(i)}] ({n})" for i, n in self.inventory.items())

    def _info(self, invalid: bool, failed: bool) -> dict[str, Any]:
        return {"success": self._success, "invalid_action": invalid, "action_failed": failed,
                "goal": item_name(self.goal or "")}


def _check_compat(compat: Any) -> None:
    if compat not in ("none", "agentgym"):
        raise ConfigError(f"env.compat must be 'none' (this env's own goals and rules) or 'agentgym' (AgentGym's "
                          f"textcraft server's), got {compat!r}")
