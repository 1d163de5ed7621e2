"""Reference agents for TextCraftEnv: a recipe planner (scripted solver) and a random agent.

Run ``python -m agentgym_env_textcraft.solvers [tasks] [max_turns]`` for the score table.
"""
from __future__ import annotations

import random
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from .catalog import Catalog, Recipe, item_name
from .env import TextCraftEnv

Policy = Callable[[TextCraftEnv, str], Iterator[str]]


def plan(catalog: Catalog, goal: str) -> list[str]:
    """The actions that craft *goal* from nothing: fetch base items, craft bottom-up.

    Ingredients already gathered for a pending craft are reserved so that crafting a later
    ingredient never consumes them.
    """
    inventory: Counter[str] = Counter()
    reserved: Counter[str] = Counter()
    actions: list[str] = []

    def free(name: str) -> int:
        return inventory[name] - reserved[name]

    def recipe_depth(recipe: Recipe) -> int:
        return 1 + max(catalog.depth(i) for _, i in recipe.inputs)

    def obtain(name: str, count: int) -> str:
        """Make sure *count* units of one item matching *name* are free; return that item."""
        for have in list(inventory):
            if catalog.matches(name, have) and free(have) >= count:
                return have
        if catalog.fetchable(name):
            actions.append(f"get {count - max(free(name), 0)} {item_name(name)}")
            inventory[name] += count - max(free(name), 0)
            return name
        options = sorted(catalog.recipes(name), key=lambda r: (r.output not in inventory, recipe_depth(r), r.text))
        if not options:
            raise ValueError(f"{item_name(name)} can be neither fetched nor crafted")
        recipe = options[0]
        while free(recipe.output) < count:
            chosen = []
            for n, ingredient in recipe.inputs:
                item = obtain(ingredient, n)
                reserved[item] += n
                chosen.append((n, item))
            actions.append(f"craft {recipe.count} {item_name(recipe.output)} using "
                           + ", ".join(f"{n} {item_name(i)}" for n, i in chosen))
            for n, item in chosen:
                reserved[item] -= n
                inventory[item] -= n
            inventory[recipe.output] += recipe.count
        return recipe.output

    obtain(goal, 1)
    return actions


def planner(env: TextCraftEnv, first_obs: str) -> Iterator[str]:
    """Play the plan for the current goal."""
    for action in plan(env.catalog, env.goal):
        yield action


def random_agent(seed: int = 0) -> Policy:
    """Each turn: run a random shown crafting command as written, get a random ingredient of
    one (with its count), or check the inventory."""

    def policy(env: TextCraftEnv, first_obs: str) -> Iterator[str]:
        rng = random.Random(seed)
        commands = [line for line in first_obs.splitlines() if line.startswith("craft ")]
        ingredients = [p.strip() for c in commands for p in c.split(" using ")[1].split(",")]
        while True:
            kind = rng.random()
            if kind < 0.45:
                yield rng.choice(commands)
            elif kind < 0.95:
                yield "get " + rng.choice(ingredients)
            else:
                yield "inventory"

    return policy


def play(env: TextCraftEnv, task_id: int, policy: Policy, max_turns: int = 40) -> dict[str, Any]:
    """Play one episode; return success, reward, turns, invalid and failed action counts."""
    obs = env.reset(task_id=task_id)
    turns = invalid = failed = 0
    reward, info = 0.0, {"success": False}
    for action in policy(env, obs):
        obs, reward, done, info = env.step(action)
        turns += 1
        invalid += bool(info.get("invalid_action"))
        failed += bool(info.get("action_failed"))
        if done or turns >= max_turns:
            break
    return {"success": bool(info.get("success")), "reward": reward, "turns": turns,
            "invalid": invalid, "failed": failed}


def score_table(tasks: int = 50, max_turns: int = 40) -> list[dict[str, Any]]:
    """Success rate and mean turns per goal depth on the first *tasks* test ids."""
    env = TextCraftEnv()
    ids = list(env.splits()["test"])[:tasks]
    rows: dict[str, dict[str, Any]] = {}
    for tid in ids:
        row = rows.setdefault(env.category(tid), {"category": env.category(tid), "n": 0})
        row["n"] += 1
        for name, policy in (("planner", planner), ("random", random_agent(tid))):
            r = play(env, tid, policy, 10_000 if name == "planner" else max_turns)
            row[name] = row.get(name, 0) + r["success"]
            row[f"{name}_turns"] = row.get(f"{name}_turns", 0) + r["turns"]
    out = []
    for key in sorted(rows, key=lambda k: int(re.sub(r"\D", "", k))):
        row = rows[key]
        n = row["n"]
        out.append({**row, **{k: row[k] / n for k in ("planner", "random", "planner_turns", "random_turns")}})
    return out


def main(argv: list[str]) -> None:
    tasks = int(argv[0]) if argv else 50
    max_turns = int(argv[1]) if len(argv) > 1 else 40
    rows = score_table(tasks, max_turns)
    print(f"success rate on the first {tasks} test tasks (random capped at {max_turns} turns)")
    print("| goal depth | tasks | planner | turns | random | turns |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['category']} | {r['n']} | {r['planner']:.2f} | {r['planner_turns']:.1f} | "
              f"{r['random']:.2f} | {r['random_turns']:.1f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
