"""One episode as it grows: exact sampled tokens plus template-rendered deltas, and its budgets.

The builder owns the token sequence, loss mask and logprobs of a :class:`Trajectory`. With a
history window of K turns, the *model's prompt* keeps the initial prompt, a pinned turn (a
strategy's plan, see :meth:`EpisodeBuilder.pin_last_turn`) and the last K other turns (cut at token
level, so kept turns are still exactly as sampled); the trajectory itself keeps every turn, so
training sees the whole episode while generation saw a shorter context.
"""
from __future__ import annotations

from typing import Any

from ..engine import GenerationResult
from .chat import ChatFormat, sentinel
from .trajectory import Trajectory, Turn


class EpisodeBuilder:
    def __init__(
        self,
        chat: ChatFormat,
        traj: Trajectory,
        *,
        system: str,
        first_observation: str,
        history_window: int = 0,
    ) -> None:
        self.chat = chat
        self.traj = traj
        self.history_window = history_window
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

    def model_prompt(self) -> list[int]:
        """The token ids the model sees for its next reply: with history_window K, the initial prompt,
        the pinned turn and the last K other turns."""
        ids = self.traj.token_ids
        k, n, p = self.history_window, len(self._turn_starts), self._pinned
        if k > 0 and p is not None and p >= n - k:
            k += 1  # a pinned turn inside the window does not take one of its K places
        if k <= 0 or n <= k:
            return list(ids)
        head = ids[: self.traj.prompt_len]
        if p is not None and p < n - k:  # out of the window: its reply and what followed it
            head = head + ids[self._turn_starts[p] : self._turn_starts[p + 1]]
        return head + ids[self._turn_starts[-k] :]

    def pin_last_turn(self) -> None:
        """Keep the latest turn (its reply and the user message after it) in every later model prompt,
        also once the history window has moved past it; a later pin replaces it."""
        self._pinned = len(self._turn_starts) - 1

    def add_reply(self, result: GenerationResult) -> Turn:
        """Append the sampled tokens (loss mask 1) and start a turn for them."""
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
