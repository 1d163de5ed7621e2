"""Rollout: play many tasks at once and return their trajectories.

Each task is an asyncio task in which the run's strategy (``parts.strategy``,
:mod:`agentgym_core.rollout.strategy`) plays it: one episode with the default strategy, one
per attempt with ``reflect``. Episodes are played by the
:class:`~agentgym_core.rollout.loop.EpisodeLoop`: generation goes through a shared
:class:`GenerationBatcher`, so the engine sees batches of many episodes, while env steps run
concurrently with other episodes' generation. An env failure ends only its own episode
(``failed=True``, ``end_reason="env_error"``); an engine failure propagates.
"""
from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import AgentGymError
from .actions import say_format_override
from .batcher import GenerationBatcher
from .loop import EpisodeLoop, Task
from .trajectory import Trajectory, dump_trajectories

if TYPE_CHECKING:
    from ..assembly import RunParts


#: ``rollout(seed=...)`` not given: the agent settings' seed.
_AGENT_SEED: Any = object()


async def rollout(
    parts: RunParts,
    tasks: Sequence[tuple[int, int]],
    *,
    max_turns: int,
    step: int = 0,
    temperature: float | None = None,
    seed: int | None = _AGENT_SEED,
    dump_path: str | os.PathLike | None = None,
    stats: dict[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
    repeat_guard: int = 0,
    repeat_temperature: float = 1.0,
) -> list[Trajectory]:
    """Play each ``(task_id, group_id)`` in *tasks* with *parts*; trajectories come back in task order.

    Each task gives its attempts in order (one trajectory with the default strategy; up to
    ``parts.strategy.max_attempts``, all in the task's group, with ``reflect``). *temperature*
    overrides the agent's (evaluation: 0.0, greedy); *seed* (default: the agent settings' seed)
    makes sampling reproducible: each episode and turn gets its own derived seed. *dump_path*
    writes the episodes as JSONL; *stats*, if given, receives timing figures; *progress* is
    called with ``(tasks finished, tasks)`` as each task's last attempt ends. *repeat_guard* (evaluation's
    ``eval.repeat_guard``): a reply whose action the episode already took in answer to the same message is sampled
    again at *repeat_temperature*, up to that many times (:meth:`EpisodeLoop._unrepeat`).
    """
    if parts.engine is None:
        raise AgentGymError("rollout needs an engine: parts.load_engine(model) (or assemble(..., model=...)) first")
    agent, strategy = parts.agent, parts.strategy
    say_format_override(parts.env.name, parts.env.action_format, parts.action_format)
    seed = agent.seed if seed is _AGENT_SEED else seed
    temp = float(agent.temperature if temperature is None else temperature)
    concurrency = int(agent.concurrency)
    unfinished = [len(tasks)]  # tasks not over yet; in lockstep, min(this, concurrency) are in flight
    lockstep = (lambda: min(unfinished[0], concurrency)) if agent.lockstep else None
    batcher = GenerationBatcher(parts.engine, lockstep=lockstep)
    episodes = EpisodeLoop(parts, batcher, max_turns=max_turns, step=step, temperature=temp, seed=seed,
                           repeat_guard=repeat_guard, repeat_temperature=repeat_temperature)
    limit = asyncio.Semaphore(concurrency)
    loop = asyncio.get_running_loop()
    started = loop.time()
    cpu_started = time.process_time()

    async def one(task: Task) -> list[Trajectory]:
        async with limit:
            try:
                return await strategy.play(episodes, task)
            finally:
                unfinished[0] -= 1
                batcher.poke()
                if progress is not None:
                    progress(len(tasks) - unfinished[0], len(tasks))

    jobs = [asyncio.ensure_future(one(Task(i, int(t), int(g)))) for i, (t, g) in enumerate(tasks)]
    try:
        trajectories = [t for attempts in await asyncio.gather(*jobs) for t in attempts]
    except BaseException:
        for job in jobs:
            job.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)
        raise
    finally:
        await batcher.aclose()
    if stats is not None:
        stats.update(
            wall_seconds=loop.time() - started,
            cpu_seconds=time.process_time() - cpu_started,
            generate_seconds=batcher.busy_seconds,
            generate_cpu_seconds=batcher.busy_cpu_seconds,
            batches=len(batcher.batch_sizes),
            mean_batch=sum(batcher.batch_sizes) / max(1, len(batcher.batch_sizes)),
        )
    if dump_path is not None:
        dump_trajectories(trajectories, dump_path, step)
    return trajectories


def run_rollout(*args: Any, **kwargs: Any) -> list[Trajectory]:
    """Synchronous :func:`rollout` (same arguments); not callable from inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(rollout(*args, **kwargs))
    raise RuntimeError("run_rollout() was called inside a running event loop; use `await rollout(...)` instead")
