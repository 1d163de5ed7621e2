"""Playing episodes with scripted agents (callables ``agent(observation) -> action``): in-process on an
env instance, or many at once through an env pool (``LocalEnvPool`` / ``HTTPEnvPool``)."""
from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any


def play(env: Any, task_id: int, agent: Callable[[str], str]) -> tuple[float, dict[str, Any], list[tuple[str, str]]]:
    """Play *task_id* on *env* with *agent* to the end (the env's ``max_turns`` bounds it).

    Returns the last reward, the last info and the ``(action, observation)`` steps.
    """
    obs, steps = env.reset(task_id=task_id), []
    reward, info, done = 0.0, {}, False
    while not done:
        action = agent(obs)
        obs, reward, done, info = env.step(action)
        steps.append((action, obs))
    return reward, info, steps


async def play_pool(pool: Any, task_ids: list[int], make_agent: Callable[[int], Callable[[str], str]],
                    concurrency: int = 16) -> dict[int, tuple[float, dict]]:
    """Play *task_ids* through an env pool with *concurrency* sessions, numbered steps as rollout sends them.

    ``make_agent(task_id)`` gives a fresh agent per episode. Returns ``{task_id: (last reward, last info)}``.
    """
    todo, results = list(reversed(task_ids)), {}

    async def worker() -> None:
        session = await pool.create()
        try:
            while todo:
                task_id = todo.pop()
                obs, agent, seq, done = await pool.reset(session, task_id), make_agent(task_id), 0, False
                while not done:
                    seq += 1
                    obs, reward, done, info = await pool.step(session, agent(obs), seq=seq)
                results[task_id] = (reward, info)
        finally:
            await pool.close(session)

    await asyncio.gather(*(worker() for _ in range(min(concurrency, len(task_ids)))))
    return results


def run_until(env: Any, task_id: int, agent: Callable[[str], str], stop: Callable[[str], bool]) -> str:
    """Play *task_id* with *agent* up to (not including) the first action *stop* accepts; returns it.
    For tests that take over an episode at a chosen moment (a confirmation, a write)."""
    obs = env.reset(task_id=task_id)
    while True:
        action = agent(obs)
        if stop(action):
            return action
        obs, _, done, _ = env.step(action)
        if done:
            raise AssertionError(f"task {task_id} ended before the awaited action: {obs[:200]}")


def user_leaks(env: Any, task_id: int, agent: Callable[[str], str]) -> list[tuple[str, str]]:
    """Play *task_id* with *agent* and return ``(value, line)`` for every user line that states a value the
    policy derives or a forbidden request's reason (:func:`~.goal.derived_values`), read as is and with dashes as
    spaces: what the simulated user must never say. Empty: none."""
    from . import text
    from .goal import derived_values

    _, _, steps = play(env, task_id, agent)
    first = env.task  # play reset the env: the task of this episode
    values = derived_values(first.goal, env.lexicon)
    prefix = f"{env.speaker}:"
    lines = [line[len(prefix):] for _, obs in steps for line in obs.splitlines() if line.startswith(prefix)]
    return [(v, line) for line in lines for v in values
            if text.has(text.normalize(line), v) or text.has(text.flat(line), v)]
