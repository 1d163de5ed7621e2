"""Reference agents for BabyAIEnv: minigrid's oracle bot, a high-level heuristic, and random.

They give the expected score range (random vs scripted) and let tests play whole episodes.
Run ``python -m agentgym_env_babyai.solvers [episodes]`` for the score table per level.
"""
from __future__ import annotations

import random
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

from .env import BabyAIEnv

PRIMITIVE_ACTIONS = ("turn left", "turn right", "move forward", "pick up", "drop", "toggle")
Policy = Callable[[BabyAIEnv, str], Iterator[str]]


def oracle(env: BabyAIEnv, first_obs: str) -> Iterator[str]:
    """minigrid's BabyAIBot, its primitive actions written in our vocabulary."""
    from minigrid.utils.baby_ai_bot import BabyAIBot

    bot = BabyAIBot(env.level)
    while True:
        action = int(bot.replan())
        if action >= len(PRIMITIVE_ACTIONS):  # "done": the bot thinks the mission is complete
            return
        yield PRIMITIVE_ACTIONS[action]


def random_agent(seed: int = 0) -> Policy:
    """Uniformly random among the actions that make sense in each state."""
    rng = random.Random(seed)

    def policy(env: BabyAIEnv, first_obs: str) -> Iterator[str]:
        while True:
            yield rng.choice(env.available_actions())

    return policy


def random_primitive(seed: int = 0) -> Policy:
    """Uniformly random primitive actions (no high-level ones): a floor for comparisons."""
    rng = random.Random(seed)

    def policy(env: BabyAIEnv, first_obs: str) -> Iterator[str]:
        while True:
            yield rng.choice(PRIMITIVE_ACTIONS)

    return policy


_MISSION = re.compile(
    r"^(?P<verb>go to|pick up|open|put) (?:the |a )?(?P<obj>\w+(?: \w+)?)(?: next to (?:the |a )?(?P<other>\w+(?: \w+)?))?"
)


def heuristic(env: BabyAIEnv, first_obs: str) -> Iterator[str]:
    """What a sensible LLM agent could do with high-level actions: act on the mission's object
    when it is in view, else turn around and walk to look for it (no map, no memory)."""
    m = _MISSION.match(env.level.mission)
    if not m:
        return
    verb, obj, other = m.group("verb"), _strip_loc(m.group("obj")), m.group("other")
    turns = 0
    while True:
        labels = [s.label for s in env.view.objects]
        carried = env.level.carrying
        if verb == "put" and carried is None:
            action = _act_on("pick up", obj, labels)
        elif verb == "put":
            action = _act_on("put next to", _strip_loc(other or ""), labels)
        else:
            action = _act_on(verb, obj, labels)
        if action is None:
            action = "turn left" if turns < 3 else "move forward"
            turns = (turns + 1) % 5
        yield action


def _strip_loc(phrase: str) -> str:
    return re.sub(r" (?:in front|behind|on your|on the).*$", "", phrase)


def _act_on(verb: str, obj: str, labels: list[str]) -> str | None:
    words = obj.split()
    for label in labels:
        parts = label.split()
        if words[-1] == parts[1] and (len(words) == 1 or words[0] == parts[0]):
            return f"{verb} {label}"
    return None


def play(env: BabyAIEnv, task_id: int, policy: Policy, max_turns: int = 64) -> dict[str, Any]:
    """Play one episode; return success, reward, turns and how many actions were invalid."""
    obs = env.reset(task_id=task_id)
    turns = invalid = 0
    reward, done, info = 0.0, False, {"success": False}
    for action in policy(env, obs):
        obs, reward, done, info = env.step(action)
        turns += 1
        invalid += bool(info.get("invalid_action"))
        if done or turns >= max_turns:
            break
    return {"success": bool(info.get("success")), "reward": reward, "turns": turns, "invalid": invalid}


def score_table(episodes: int = 20, max_turns: int = 20, levels: Any = None) -> list[dict[str, Any]]:
    """Success rate and mean turns per level for each reference agent (held-out test ids)."""
    env = BabyAIEnv(levels=levels)
    k, test = len(env.levels), env.splits()["test"]
    agents = {"oracle": oracle, "heuristic": heuristic, "random": random_agent(0), "random_prim": random_primitive(0)}
    rows = []
    for i, level in enumerate(env.levels):
        row: dict[str, Any] = {"level": level}
        ids = [test[0] + i + k * n for n in range(episodes)]
        for name, policy in agents.items():
            limit = 10_000 if name == "oracle" else max_turns
            results = [play(env, tid, policy, limit) for tid in ids]
            row[name] = sum(r["success"] for r in results) / len(results)
            row[f"{name}_turns"] = sum(r["turns"] for r in results) / len(results)
        rows.append(row)
    env.close()
    return rows


def main(argv: list[str]) -> None:
    episodes = int(argv[0]) if argv else 20
    max_turns = int(argv[1]) if len(argv) > 1 else 20
    rows = score_table(episodes, max_turns)
    print(f"success rate on {episodes} test tasks per level (heuristic/random capped at {max_turns} turns)")
    print(f"| {'level':16} | oracle | turns | heuristic | turns | random | turns | random primitive | turns |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['level']:16} | {r['oracle']:.2f} | {r['oracle_turns']:.1f} | {r['heuristic']:.2f} | "
              f"{r['heuristic_turns']:.1f} | {r['random']:.2f} | {r['random_turns']:.1f} | "
              f"{r['random_prim']:.2f} | {r['random_prim_turns']:.1f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
