"""Rollout: play many episodes at once and return their trajectories.

Each episode is an asyncio task: create an env session, reset, then alternate generation
(through a shared :class:`Batcher`, so the engine sees batches of many episodes) and env steps
(which run concurrently with other episodes' generation). An env failure ends only its own
episode (``failed=True``, ``end_reason="env_error"``); an engine failure propagates.
"""
from __future__ import annotations

import asyncio
import json
import os
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..engine import GenerationRequest, SamplingParams
from ..errors import AgentGymError
from .actions import STOP_STRINGS, parse_action, parse_error_observation
from .batcher import Batcher
from .chat import ChatFormat
from .episode import EpisodeBuilder
from .trajectory import Trajectory

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
) -> list[Trajectory]:
    """Play one episode per ``(task_id, group_id)`` in *tasks* with *parts*; trajectories come back in task order.

    *temperature* overrides the agent's (evaluation: 0.0, greedy); *seed* (default: the agent
    settings' seed) makes sampling reproducible: each episode and turn gets its own derived
    seed. *dump_path* writes the episodes as JSONL; *stats*, if given, receives timing figures;
    *progress* is called with ``(episodes finished, episodes)`` as each episode ends.
    """
    from ..assembly import say_format_override

    if parts.engine is None:
        raise AgentGymError("rollout needs an engine: parts.load_engine(model) (or assemble(..., model=...)) first")
    engine, pool, agent, env = parts.engine, parts.pool, parts.agent, parts.env
    fmt = parts.action_format
    say_format_override(parts)
    seed = agent.seed if seed is _AGENT_SEED else seed
    temp = float(agent.temperature if temperature is None else temperature)
    chat = ChatFormat(engine.tokenizer, agent.chat_template)
    instruction, position = env.instruction, agent.instruction_position
    if position == "system":
        system = instruction if not agent.system_prompt else f"{agent.system_prompt}\n\n{instruction}"
    else:  # the instruction goes into the first user message; small models follow that better
        system = agent.system_prompt or ""
    params = dict(
        temperature=temp,
        top_p=float(agent.top_p) if temp > 0 else 1.0,
        max_new_tokens=int(agent.max_new_tokens),
        stop_strings=tuple(STOP_STRINGS[fmt]) + chat.stop_strings,
        stop_token_ids=chat.stop_token_ids,
    )
    budget = int(agent.max_episode_tokens)
    reserve = len(chat.encode(chat.eot_text)) if chat.eot_text else 0  # an end-of-turn we may have to append
    context = int(agent.max_context) if agent.max_context else None
    name = env.name
    concurrency = int(agent.concurrency)
    unfinished = [len(tasks)]  # episodes not over yet; in lockstep, min(this, concurrency) are in flight
    lockstep = (lambda: min(unfinished[0], concurrency)) if agent.lockstep else None
    batcher = Batcher(engine, lockstep=lockstep)
    limit = asyncio.Semaphore(concurrency)
    loop = asyncio.get_running_loop()
    started = loop.time()
    cpu_started = time.process_time()

    async def one(index: int, task_id: int, group_id: int) -> Trajectory:
        async with limit:
            traj = Trajectory(
                episode_id=f"s{step}-e{index}-t{task_id}", env_name=name, task_id=int(task_id),
                group_id=int(group_id), token_ids=[], loss_mask=[], logprobs=[], prompt_len=0,
                max_turns=max_turns, step=step,
            )
            try:
                await _play(traj, index)
            finally:
                engine.release(traj.episode_id)
                unfinished[0] -= 1
                batcher.poke()
                if progress is not None:
                    progress(len(tasks) - unfinished[0], len(tasks))
            return traj

    async def _play(traj: Trajectory, index: int) -> None:
        session = None
        try:
            session = await pool.create()
            first = await pool.reset(session, traj.task_id)
        except Exception as exc:  # noqa: BLE001 - one bad env session fails one episode
            _fail(traj, "create/reset", exc)
            await _close(session)
            return
        if position == "before_observation":
            first = f"{instruction}\n\n{first}"
        elif position == "after_observation":
            first = f"{first}\n\n{instruction}"
        ep = EpisodeBuilder(chat, traj, system=system, first_observation=first, history_window=int(agent.history_window))
        seq = 0
        try:
            traj.end_reason = "max_turns"
            for turn_no in range(max_turns):
                room = min(budget - len(ep), (context - len(ep)) if context else budget) - reserve
                if room < 1:
                    traj.end_reason = "max_tokens" if budget - len(ep) - reserve < 1 else "context"
                    break
                sp = SamplingParams(**{**params, "max_new_tokens": min(params["max_new_tokens"], room)},
                                    seed=_derive(seed, step, index, turn_no))
                prompt = ep.model_prompt()
                result = await batcher.generate(GenerationRequest(prompt, sp, cache_key=traj.episode_id), order=index)
                turn = ep.add_reply(result)
                turn.prompt_tokens = len(prompt)
                action, error = parse_action(ep.contents[-1], fmt)
                turn.action, turn.parse_error = action, error
                if error is not None:
                    obs, reward, done, info = parse_error_observation(error, fmt), 0.0, False, {"parse_error": True}
                else:
                    seq += 1
                    try:
                        obs, reward, done, info = await pool.step(session, action, seq)
                    except Exception as exc:  # noqa: BLE001
                        _fail(traj, f"step {seq}", exc)
                        ep.close_reply()
                        return
                turn.observation, turn.env_reward, turn.done, turn.info = obs, float(reward), bool(done), dict(info)
                traj.score += float(reward)
                if done:
                    traj.end_reason = "done"
                    traj.success = bool(info.get("success", reward > 0))
                    ep.close_reply()
                    break
                delta = ep.observation_delta(obs)
                over_budget = len(ep) + len(delta) >= budget
                over_context = context is not None and len(ep) + len(delta) >= context
                if over_budget or over_context:
                    traj.end_reason = "max_tokens" if over_budget else "context"
                    ep.close_reply()
                    break
                ep.commit_observation()
            else:
                ep.close_reply()
        finally:
            await _close(session)

    async def _close(session: str | None) -> None:
        if session is None:
            return
        try:
            await pool.close(session)
        except Exception:  # noqa: BLE001 - the episode is over; a failed close must not lose it
            pass

    jobs = [asyncio.ensure_future(one(i, t, g)) for i, (t, g) in enumerate(tasks)]
    try:
        trajectories = list(await asyncio.gather(*jobs))
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


def dump_trajectories(trajectories: Sequence[Trajectory], path: str | os.PathLike, step: int) -> Path:
    """Write one JSON line per trajectory: *path* itself if it ends in ``.jsonl``, else ``path/step_XXXXXX.jsonl``."""
    target = Path(path)
    if target.suffix != ".jsonl":
        target = target / f"step_{step:06d}.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(t.to_dict(), ensure_ascii=False, default=str) + "\n" for t in trajectories)
    return target


def _fail(traj: Trajectory, where: str, exc: BaseException) -> None:
    traj.failed = True
    traj.end_reason = "env_error"
    traj.error = f"env {where} failed: {type(exc).__name__}: {exc}"


def _derive(seed: int | None, *parts: int) -> int | None:
    if seed is None:
        return None
    return zlib.crc32(json.dumps([seed, *parts]).encode())
