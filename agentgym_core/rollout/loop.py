"""The episode loop: one episode of one task, reply by reply, as an exact token sequence.

:class:`EpisodeLoop` holds what every episode of a rollout shares (the chat format, the
batcher, the env pool, sampling settings and budgets). A strategy
(:mod:`agentgym_core.rollout.strategy`) calls :meth:`EpisodeLoop.play` once per attempt at a
task: create an env session, reset, then alternate generation (through the shared batcher, so
the engine sees batches of many episodes) and env steps. The strategy decides the text of
each user message and whether the next reply is an action (parsed and sent to the env) or a
reply of its own kind (a plan: kept in the episode, not sent). An env failure ends only its
own episode (``failed=True``, ``end_reason="env_error"``); an engine failure propagates.
"""
from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..engine import GenerationRequest, GenerationResult, SamplingParams
from .actions import STOP_STRINGS, parse_action, parse_error_observation
from ..errors import AgentGymError
from .chat import ChatFormat
from .episode import EpisodeBuilder
from .trajectory import Trajectory

if TYPE_CHECKING:
    from ..assembly import RunParts
    from .batcher import GenerationBatcher
    from .strategy import Strategy

#: The kind of a reply that is parsed as an action and sent to the env.
ACTION = "action"


@dataclass(frozen=True)
class Task:
    """One entry of a rollout: the ``index``-th ``(task_id, group_id)`` pair it was given."""

    index: int
    task_id: int
    group_id: int


class EpisodeLoop:
    """Plays episodes for one rollout; see the module docstring."""

    def __init__(self, parts: RunParts, batcher: GenerationBatcher, *, max_turns: int, step: int, temperature: float,
                 seed: int | None, repeat_guard: int = 0, repeat_temperature: float = 1.0) -> None:
        agent, env = parts.agent, parts.env
        self.pool, self.batcher, self.engine = parts.pool, batcher, parts.engine
        self.max_turns, self.step, self.seed = max_turns, step, seed
        self.format = parts.action_format
        self.chat = ChatFormat(parts.engine.tokenizer, agent.chat_template)
        self.instruction, self.position = env.instruction, agent.instruction_position
        self.env_name = env.name
        if self.position == "system":
            prompt = agent.system_prompt
            self.system = self.instruction if not prompt else f"{prompt}\n\n{self.instruction}"
        else:  # the instruction goes into the first user message; small models follow that better
            self.system = agent.system_prompt or ""
        self.temperature = temperature
        #: The repeat guard (evaluation): how often a reply whose action the episode already took in answer to the
        #: same message is sampled again, at *repeat_temperature* (0: never).
        self.repeat_guard, self.repeat_temperature = int(repeat_guard), float(repeat_temperature)
        self.top_p = float(agent.top_p)
        self.params = dict(
            temperature=temperature,
            top_p=float(agent.top_p) if temperature > 0 else 1.0,
            max_new_tokens=int(agent.max_new_tokens),
            stop_strings=tuple(STOP_STRINGS[self.format]) + self.chat.stop_strings,
            stop_token_ids=self.chat.stop_token_ids,
        )
        #: The stored episode's bounds: all its tokens, and the tokens the model generated in it (0: none).
        self.budget = int(agent.max_episode_tokens)
        self.generated_budget = int(agent.max_generated_tokens)
        #: An end-of-turn marker we may have to append after the last reply.
        self.reserve = len(self.chat.encode(self.chat.eot_text)) if self.chat.eot_text else 0
        #: The model's bound: the prompt it attends to (what the context policy shows) plus its reply.
        self.context = int(agent.max_context) if agent.max_context else None
        self.context_policy = parts.context
        self._check_bounds()

    def _check_bounds(self) -> None:
        """Refuse bounds no episode can meet: the prompt before any observation does not fit."""
        if not self.context:
            return
        _, _, ids = self.chat.start(self.system, self.first_message(""))
        fixed = len(ids)
        if fixed >= self.context:
            where = "system prompt and instruction" if self.position == "system" else "instruction"
            raise AgentGymError(
                f"the prompt before any observation is {fixed} tokens ({self.env_name}'s {where}, rendered with "
                f"the chat template), but model.max_context is {self.context}: no reply could ever be generated. "
                f"Raise model.max_context (the model's limit allowing), or shorten the instruction "
                f"(agent.system_prompt, the env's own options such as a brief instruction)")

    def new_trajectory(self, task: Task, *, attempt: int = 1, first: Trajectory | None = None) -> Trajectory:
        """An empty trajectory for *task*; attempts after the first are linked to *first* (attempt 1)."""
        episode_id = f"s{self.step}-e{task.index}-t{task.task_id}"
        return Trajectory(
            episode_id=episode_id if attempt == 1 else f"{episode_id}-a{attempt}", env_name=self.env_name,
            task_id=int(task.task_id), group_id=int(task.group_id), token_ids=[], loss_mask=[], logprobs=[],
            prompt_len=0, max_turns=self.max_turns, step=self.step, attempt=attempt,
            first_episode_id=first.episode_id if first is not None else episode_id,
        )

    def first_message(self, observation: str) -> str:
        """The first user message for the env's first *observation* (with the instruction where it goes)."""
        if self.position == "before_observation":
            return f"{self.instruction}\n\n{observation}"
        if self.position == "after_observation":
            return f"{observation}\n\n{self.instruction}"
        return observation

    def derive_seed(self, *parts: Any) -> int | None:
        """A sampling seed of its own for one reply: the rollout's seed, step and *parts*."""
        return _derive(self.seed, self.step, *parts)

    async def generate(self, prompt: list[int], *, max_new_tokens: int, seed: int | None, order: int,
                       cache_key: str | None = None, stop_strings: tuple[str, ...] | None = None,
                       temperature: float | None = None) -> GenerationResult:
        """One reply to *prompt* through the shared batcher, with the rollout's sampling settings (*temperature*
        in place of the rollout's, if given)."""
        params = {**self.params, "max_new_tokens": max_new_tokens}
        if stop_strings is not None:
            params["stop_strings"] = stop_strings
        if temperature is not None:
            params.update(temperature=temperature, top_p=self.top_p if temperature > 0 else 1.0)
        request = GenerationRequest(prompt, SamplingParams(**params, seed=seed), cache_key=cache_key)
        return await self.batcher.generate(request, order=order)

    async def play(self, task: Task, traj: Trajectory, strategy: Strategy) -> EpisodeBuilder | None:
        """Play one episode into *traj*; returns its builder (None when the env failed before the first reply)."""
        session = None
        try:
            try:
                session = await self.pool.create()
                first = await self.pool.reset(session, traj.task_id)
            except Exception as exc:  # noqa: BLE001 - one bad env session fails one episode
                _fail(traj, "create/reset", exc)
                return None
            return await self._turns(task, traj, strategy, session, first)
        finally:
            await self._close(session)
            self.engine.release(traj.episode_id)

    async def _turns(self, task: Task, traj: Trajectory, strategy: Strategy, session: str,
                     first: str) -> EpisodeBuilder:
        text, kind = strategy.message(traj, self.first_message(first))
        ep = EpisodeBuilder(self.chat, traj, system=self.system, first_observation=text,
                            context=self.context_policy)
        budget, context, reserve, generated_budget = self.budget, self.context, self.reserve, self.generated_budget
        seq = actions = generated = 0
        #: For the repeat guard: each message's text -> the actions taken in answer to it.
        taken: dict[str, set[str]] = {}
        # Attempt 1 samples with the seeds episodes always had; later attempts with their own.
        extra = () if traj.attempt == 1 else (traj.attempt,)
        traj.end_reason = "max_turns"
        while actions < self.max_turns:
            prompt, spans = ep.model_prompt()
            rooms = {"max_tokens": budget - len(ep) - reserve}  # first the bound the end reason names
            if generated_budget:
                rooms["max_generated"] = generated_budget - generated
            if context:
                rooms["context"] = context - len(prompt)
            bound, room = min(rooms.items(), key=lambda kv: kv[1])
            if room < 1:
                traj.end_reason = bound
                break
            limit = self.params["max_new_tokens"] if kind == ACTION else strategy.reply_tokens(kind)
            seed_parts = (task.index, len(traj.turns), *extra)
            result = await self.generate(prompt, max_new_tokens=min(limit, room), order=task.index,
                                         seed=self.derive_seed(*seed_parts), cache_key=traj.episode_id)
            resampled = 0
            if self.repeat_guard and kind == ACTION:
                result, resampled = await self._unrepeat(result, taken.setdefault(text, set()), prompt, seed_parts,
                                                         max_new_tokens=min(limit, room), order=task.index,
                                                         cache_key=traj.episode_id)
            turn = ep.add_reply(result, spans)
            if resampled:
                turn.resampled = resampled
            generated += len(result.token_ids)
            if kind != ACTION:  # the strategy's own reply (a plan): kept in the episode, not sent to the env
                turn.kind = kind
                if kind in strategy.keep_in_context:
                    ep.pin_last_turn()
                turn.observation = strategy.follow_up(traj, turn)
                text, kind = strategy.message(traj, turn.observation)
            else:
                actions += 1
                action, error = parse_action(ep.contents[-1], self.format)
                turn.action, turn.parse_error = action, error
                if self.repeat_guard and action is not None:
                    taken[text].add(action)
                if error is not None:
                    obs, reward, done = parse_error_observation(error, self.format), 0.0, False
                    info = {"parse_error": True}
                else:
                    seq += 1
                    try:
                        obs, reward, done, info = await self.pool.step(session, action, seq)
                    except Exception as exc:  # noqa: BLE001
                        _fail(traj, f"step {seq}", exc)
                        ep.close_reply()
                        return ep
                turn.observation, turn.env_reward, turn.done, turn.info = obs, float(reward), bool(done), dict(info)
                traj.score += float(reward)
                if done:
                    traj.end_reason = "done"
                    traj.success = bool(info.get("success", reward > 0))
                    ep.close_reply()
                    break
                text, kind = strategy.message(traj, obs)
            delta = ep.observation_delta(text)
            over_budget = len(ep) + len(delta) >= budget
            over_context = bool(context) and ep.prompt_length(delta) >= context
            if over_budget or over_context:
                traj.end_reason = "max_tokens" if over_budget else "context"
                ep.close_reply()
                break
            ep.commit_observation()
        else:
            ep.close_reply()
        return ep

    async def _unrepeat(self, result: GenerationResult, seen: set[str], prompt: list[int], seed_parts: tuple,
                        **kw: Any) -> tuple[GenerationResult, int]:
        """The repeat guard: while *result*'s action is one of *seen* (taken before in answer to the same message,
        so greedy decoding would go round the same loop), sample the reply again at the guard's temperature with
        a seed of its own, at most ``repeat_guard`` times; returns the reply kept and how many were set aside."""
        tries = 0
        while tries < self.repeat_guard:
            action, error = parse_action(self.chat.split_reply(result.token_ids)[0], self.format)
            if error is not None or action not in seen:
                break
            tries += 1
            result = await self.generate(prompt, seed=self.derive_seed(*seed_parts, "repeat", tries),
                                         temperature=self.repeat_temperature, **kw)
        return result, tries

    async def _close(self, session: str | None) -> None:
        if session is None:
            return
        try:
            await self.pool.close(session)
        except Exception:  # noqa: BLE001 - the episode is over; a failed close must not lose it
            pass


def _fail(traj: Trajectory, where: str, exc: BaseException) -> None:
    traj.failed = True
    traj.end_reason = "env_error"
    traj.error = f"env {where} failed: {type(exc).__name__}: {exc}"


def _derive(seed: int | None, *parts: Any) -> int | None:
    if seed is None:
        return None
    return zlib.crc32(json.dumps([seed, *parts]).encode())
