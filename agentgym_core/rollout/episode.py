"""One episode as it grows: exact sampled tokens plus template-rendered deltas, and its budgets.

The builder owns the token sequence, loss mask and logprobs of a :class:`Trajectory`. The
*model's prompt* for the next reply is chosen by a context policy
(:mod:`agentgym_core.rollout.context`: the whole episode, or the initial prompt, a pinned turn
-- a strategy's plan, see :meth:`EpisodeBuilder.pin_last_turn` -- and the last K turns, cut at token
level so kept turns are still exactly as sampled). The trajectory keeps every turn, and each
turn records the spans of the episode its reply was sampled from (``Turn.context``; None when
that was the whole episode before it), which is what the update scores it under.
"""
from __future__ import annotations

from typing import Any

from ..engine import GenerationResult
from .chat import ChatFormat, sentinel
from .context import ContextPolicy, EpisodeView, Span, check_spans
from .trajectory import Trajectory, Turn


class EpisodeBuilder:
    def __init__(
        self,
        chat: ChatFormat,
        traj: Trajectory,
        *,
        system: str,
        first_observation: str,
        context: ContextPolicy | None = None,
    ) -> None:
        self.chat = chat
        self.traj = traj
        self.context = context if context is not None else ContextPolicy()
        self.skeleton, self.skeleton_text, prompt_ids = chat.start(system, first_observation)
        self.messages = [dict(m) for m in self.skeleton]  # with the real assistant contents
        traj.token_ids = list(prompt_ids)
        traj.loss_mask = [0] * len(prompt_ids)
        traj.logprobs = [0.0] * len(prompt_ids)
        traj.prompt_len = len(prompt_ids)
        #: Where each turn's tokens (reply + delta) begin, for the history window.
        self._turn_starts: list[int] = []
        self._eot_sampled = False
        #: Each reply's message content (the sampled text without a sampled end-of-turn marker).
        self.contents: list[str] = []
        self._pending: tuple[str, Any] | None = None
        #: The turn kept in the model's prompt however far back it lies (None: none).
        self._pinned: int | None = None

    def __len__(self) -> int:
        return len(self.traj.token_ids)

    def view(self, extra: list[int] | None = None) -> EpisodeView:
        """The episode as a context policy sees it (with *extra* tokens appended: a delta not committed yet)."""
        ids = self.traj.token_ids if not extra else self.traj.token_ids + extra
        return EpisodeView(ids, self.traj.prompt_len, tuple(self._turn_starts),
                           tuple(t.kind for t in self.traj.turns), self._pinned)

    def context_spans(self, extra: list[int] | None = None) -> list[Span]:
        """The spans of the episode the model sees for its next reply (checked, merged)."""
        view = self.view(extra)
        return check_spans(self.context.spans(view), view.length, self.context.name)

    def model_prompt(self) -> tuple[list[int], list[Span]]:
        """The token ids the model sees for its next reply, and the spans of the episode they are."""
        ids = self.traj.token_ids
        spans = self.context_spans()
        if spans == [(0, len(ids))]:
            return list(ids), spans
        return [t for a, b in spans for t in ids[a:b]], spans

    def prompt_length(self, extra: list[int] | None = None) -> int:
        """Tokens of the model's next prompt once *extra* (an observation delta) is appended."""
        return sum(b - a for a, b in self.context_spans(extra))

    def pin_last_turn(self) -> None:
        """Keep the latest turn (its reply and the user message after it) in every later model prompt,
        also once the history window has moved past it; a later pin replaces it."""
        self._pinned = len(self._turn_starts) - 1

    def add_reply(self, result: GenerationResult, context: list[Span] | None = None) -> Turn:
        """Append the sampled tokens (loss mask 1) and start a turn for them; *context* is the spans of
        the episode the reply was sampled from (recorded unless they are the whole episode before it)."""
        t = self.traj
        start = len(t.token_ids)
        self._turn_starts.append(start)
        t.token_ids.extend(result.token_ids)
        t.loss_mask.extend([1] * len(result.token_ids))
        t.logprobs.extend(float(x) for x in result.logprobs)
        t.prefill_tokens += result.prefill_tokens
        content, self._eot_sampled = self.chat.split_reply(result.token_ids)
        turn = Turn(start=start, end=len(t.token_ids), text=self.chat.decode(result.token_ids), action=None)
        turn.finish_reason = result.finish_reason
        turn.prefill_tokens = result.prefill_tokens
        turn.version = getattr(result, "weight_version", None)
        if context is not None:
            turn.prompt_tokens = sum(b - a for a, b in context)
            if context != [(0, start)]:
                turn.context = [[a, b] for a, b in context]
        self.contents.append(content)
        t.turns.append(turn)
        return turn

    def observation_delta(self, observation: str) -> list[int]:
        """Tokens that would follow the latest reply for *observation* (not appended yet)."""
        d = self.chat.delta(self.skeleton, self.skeleton_text, observation, self._eot_sampled)
        if d.fallback:
            self.traj.template_fallback = True
        self._pending = (observation, d)
        return d.ids

    def commit_observation(self) -> None:
        """Append the delta computed by :meth:`observation_delta` (loss mask 0)."""
        assert self._pending is not None, "observation_delta() must come first"
        observation, d = self._pending
        self._pending = None
        t = self.traj
        t.token_ids.extend(d.ids)
        t.loss_mask.extend([0] * len(d.ids))
        t.logprobs.extend([0.0] * len(d.ids))
        n = len(t.turns) - 1
        content = self.contents[-1]
        self.skeleton += [{"role": "assistant", "content": sentinel(n)}, {"role": "user", "content": observation}]
        self.messages += [{"role": "assistant", "content": content}, {"role": "user", "content": observation}]
        self.skeleton_text = self.chat.skeleton_text(self.skeleton)
        self._eot_sampled = True  # the delta closed the reply: close_reply() has nothing left to end

    def close_reply(self) -> None:
        """End the episode after a reply: append the end-of-turn marker if the model did not produce it.

        After :meth:`commit_observation` (an episode cut at ``max_turns`` ends on the last
        observation and the generation prompt) nothing is appended: no reply is open.
        """
        if self._eot_sampled or not self.chat.eot_text:
            return
        ids = self.chat.encode(self.chat.eot_text)
        t = self.traj
        t.token_ids.extend(ids)
        t.loss_mask.extend([0] * len(ids))
        t.logprobs.extend([0.0] * len(ids))
        self._eot_sampled = True


def rendered_text(builder: EpisodeBuilder) -> str:
    """The template's render of the committed conversation, each reply exactly as sampled (for checks)."""
    text = builder.skeleton_text
    for i, content in enumerate(builder.contents):
        text = text.replace(sentinel(i), content, 1)
    return text
