"""One episode behind the policy endpoint: its key, its calls and their exact tokens, its budgets.

:meth:`PolicyEpisode.complete` serves one chat request: render the prompt with earlier replies
spliced in as sampled (:mod:`agentgym_external.prompt`), check the episode's token budgets,
sample through the run's generation batcher, record the call into the trace
(:mod:`agentgym_external.trace`) and return the reply as the API shows it (tool calls parsed).
Steps the agent takes in its env session are recorded beside the calls
(:meth:`PolicyEpisode.record_step`) and attached to the reply they followed.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import secrets
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agentgym_core import GenerationRequest, GenerationResult, SamplingParams, Trajectory

from .prompt import Completion, PromptRenderer
from .trace import TraceBuilder
from .tools import RequestError, ToolCall, parse_tool_calls
from .wire import ChatReply, ChatRequest


class BudgetExceeded(RequestError):
    """A call would pass one of the episode's token budgets (HTTP 400 ``context_length_exceeded``)."""


class EpisodeClosed(Exception):
    """The episode is over (its agent timed out, or the rollout ended it): the call gets no reply."""


@dataclass(frozen=True)
class Limits:
    """What one episode may use; 0 or None: no bound."""

    #: The most new tokens of one reply (a request's ``max_tokens`` may ask for fewer).
    max_new_tokens: int = 256
    #: Tokens the stored episode may reach (``rollout.max_episode_tokens``).
    max_episode_tokens: int = 0
    #: Tokens the model may generate over the episode (``rollout.max_generated_tokens``).
    max_generated_tokens: int = 0
    #: A prompt plus its reply (``model.max_context``).
    max_context: int | None = None
    #: Calls in the episode.
    max_calls: int = 0


@dataclass(frozen=True)
class Sampling:
    temperature: float = 1.0
    top_p: float = 1.0
    #: Stop strings and ids every call gets (the chat template's end-of-turn marker).
    stop_strings: tuple[str, ...] = ()
    stop_token_ids: tuple[int, ...] = ()
    #: Use the request's ``temperature``, ``top_p`` and ``seed`` (True: a standalone endpoint; False in
    #: training, where the rollout's sampling settings hold whatever the agent asks for).
    from_request: bool = False


@dataclass
class StepRecord:
    """An env step the agent took, after *calls* replies."""

    calls: int
    action: str
    observation: str
    reward: float
    done: bool
    info: dict[str, Any] = field(default_factory=dict)


class PolicyEpisode:
    """See the module docstring. *generate* runs one request through the engine (an awaitable in the
    endpoint's event loop); *seed_for(call)* gives each call's sampling seed (None: unseeded)."""

    def __init__(self, name: str, renderer: PromptRenderer, generate: Callable[[GenerationRequest],
                 Awaitable[GenerationResult]], *, limits: Limits, sampling: Sampling,
                 seed_for: Callable[[int], int | None] | None = None, key: str | None = None) -> None:
        self.name = name
        self.key = key or f"agk-{secrets.token_hex(16)}"
        self.renderer, self.chat = renderer, renderer.chat
        self.generate = generate
        self.limits, self.sampling = limits, sampling
        self.seed_for = seed_for or (lambda call: None)
        self.trace = TraceBuilder()
        self.completions: list[Completion] = []
        self.steps: list[StepRecord] = []
        self.calls = 0  # calls started
        self.generated = 0
        #: Why the episode hit a bound (``max_tokens``, ``max_generated``, ``context``, ``max_calls``), if it did.
        self.end_reason: str | None = None
        #: An engine failure during a call: the rollout re-raises it, as for the rollout loop's own episodes.
        self.engine_error: BaseException | None = None
        #: The last call's messages and its reply, in the OpenAI format (``Trajectory.transcript``).
        self.transcript: list[dict[str, Any]] | None = None
        self.closed = False
        #: The :class:`~agentgym_external.task.AgentTask` of a rollout's episode (None: a standalone endpoint's).
        self.task: Any = None
        self._lock = threading.Lock()

    # -- one call ------------------------------------------------------------------------------
    async def complete(self, req: ChatRequest) -> ChatReply:
        if self.closed:
            raise EpisodeClosed(f"episode {self.name} is over")
        prompt = self.renderer.render(req.messages, req.tools, req.tool_choice, self.completions)
        with self._lock:
            call = self.calls
            max_new = self._room(prompt.ids, req.max_tokens)
            self.calls += 1
        s = self.sampling
        temperature = req.temperature if s.from_request and req.temperature is not None else s.temperature
        top_p = req.top_p if s.from_request and req.top_p is not None else s.top_p
        seed = req.seed if s.from_request and req.seed is not None else self.seed_for(call)
        params = SamplingParams(temperature=temperature, top_p=top_p if temperature > 0 else 1.0,
                                max_new_tokens=max_new, stop_strings=tuple(s.stop_strings) + req.stop,
                                stop_token_ids=s.stop_token_ids, seed=seed)
        try:
            result = await self.generate(GenerationRequest(prompt.ids, params, cache_key=self.name))
        except (EpisodeClosed, asyncio.CancelledError, concurrent.futures.CancelledError, RuntimeError) as exc:
            if self.closed:  # the rollout ended the episode (and maybe its event loop) while it generated
                raise EpisodeClosed(f"episode {self.name} ended while its call was generating") from None
            if isinstance(exc, RuntimeError):
                self.engine_error = self.engine_error or exc
            raise
        except Exception as exc:  # noqa: BLE001 - kept for the rollout, which fails the run with it
            self.engine_error = self.engine_error or exc
            raise
        if self.closed:
            raise EpisodeClosed(f"episode {self.name} ended while its call was generating")
        return self._record(req, prompt.ids, result)

    def _room(self, prompt: list[int], asked: int | None) -> int:
        """The most new tokens this call may have; raises :class:`BudgetExceeded` when it may have none."""
        lim = self.limits
        rooms = {"max_tokens_per_call": min(asked or lim.max_new_tokens, lim.max_new_tokens)}
        if lim.max_episode_tokens:
            reserve = len(self.chat.encode(self.chat.eot_text)) if self.chat.eot_text else 0
            stored = self.trace.stored_after(self.trace.place(prompt), 0)
            rooms["max_tokens"] = lim.max_episode_tokens - stored - reserve
        if lim.max_generated_tokens:
            rooms["max_generated"] = lim.max_generated_tokens - self.generated
        if lim.max_context:
            rooms["context"] = lim.max_context - len(prompt)
        if lim.max_calls and self.calls >= lim.max_calls:
            rooms["max_calls"] = 0
        bound, room = min(rooms.items(), key=lambda kv: kv[1])
        if room >= 1:
            return room
        self.end_reason = self.end_reason or bound
        what = {"max_tokens": f"the episode's stored tokens (rollout.max_episode_tokens={lim.max_episode_tokens})",
                "max_generated": f"the tokens the model may generate in an episode (rollout.max_generated_tokens="
                                 f"{lim.max_generated_tokens})",
                "context": f"the model's context (model.max_context={lim.max_context}): the prompt is "
                           f"{len(prompt)} tokens",
                "max_calls": f"the calls an episode may make (max_calls={lim.max_calls})"}[bound]
        raise BudgetExceeded(f"this call would pass {what}; the episode is over: end the agent's loop",
                             code="context_length_exceeded")

    def _record(self, req: ChatRequest, prompt: list[int], result: GenerationResult) -> ChatReply:
        chat = self.chat
        content, eot_sampled = chat.split_reply(result.token_ids)
        for stop in req.stop:  # the API leaves a stop sequence out of the content (the tokens keep it)
            if stop in content:
                content = content[: content.index(stop)]
        with self._lock:
            index = len(self.completions)
            calls: list[ToolCall] = []
            text: str | None = content
            if req.tools:
                ids = iter(range(1000))
                text, calls = parse_tool_calls(content, lambda: f"call_{index}_{next(ids)}_{secrets.token_hex(4)}")
            self.completions.append(Completion(index, list(result.token_ids), eot_sampled, text or "", calls))
            self.trace.add(prompt, result, chat.decode(result.token_ids))
            self.generated += len(result.token_ids)
            finish = "tool_calls" if calls else result.finish_reason
            reply = ChatReply(text, calls, finish, len(prompt), len(result.token_ids),
                              [(chat.decode([t]), float(lp)) for t, lp in zip(result.token_ids, result.logprobs)])
            self.transcript = [_plain(m) for m in req.messages] + [reply.message()]
        return reply

    # -- the env session's steps -----------------------------------------------------------------
    def record_step(self, action: str, observation: str, reward: float, done: bool, info: dict[str, Any]) -> None:
        with self._lock:
            self.steps.append(StepRecord(len(self.completions), action, observation, reward, done, dict(info)))

    # -- the result ------------------------------------------------------------------------------
    def fill(self, traj: Trajectory) -> None:
        """Put the episode's tokens, turns, env steps and transcript into *traj* (after it ended)."""
        with self._lock:
            last_eot = self.completions[-1].eot_sampled if self.completions else True
            eot = chat_eot(self.chat)
            self.trace.close(eot, last_eot)
            self.trace.fill(traj)
            by_turn: dict[int, list[StepRecord]] = {}
            for step in self.steps:  # a step belongs to the reply it followed (one before any reply: the first)
                traj.score += step.reward
                if traj.turns:
                    by_turn.setdefault(max(0, min(step.calls, len(traj.turns)) - 1), []).append(step)
            for k, steps in by_turn.items():
                turn, last = traj.turns[k], steps[-1]
                turn.kind, turn.action, turn.observation = "action", last.action, last.observation
                turn.env_reward = sum(s.reward for s in steps)
                turn.done = any(s.done for s in steps)
                turn.info = {**last.info, **({"env_steps": len(steps)} if len(steps) > 1 else {})}
            traj.transcript = self.transcript


def chat_eot(chat: Any) -> list[int]:
    return chat.encode(chat.eot_text) if chat.eot_text else []


def _plain(message: dict[str, Any]) -> dict[str, Any]:
    """A normalized request message back in the OpenAI format (for the transcript)."""
    out = {k: v for k, v in message.items() if k != "tool_calls"}
    if message.get("tool_calls"):
        out["tool_calls"] = [c.to_openai() for c in message["tool_calls"]]
    return out
