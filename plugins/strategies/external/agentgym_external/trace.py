"""An external agent's calls as one token-exact trajectory, stored once, segmented where prompts break.

Each call brings the prompt ids the endpoint rendered (:mod:`agentgym_external.prompt`) and the
ids the engine sampled with their log-probs. The first call's prompt opens the episode's tokens.
A later call is placed against the calls before it: the longest prefix its prompt shares with one
of them (the latest on a tie) is already stored, so only the rest of the prompt is appended (loss
mask 0), then the sampled ids (loss mask 1). The reply's ``Turn.context`` is the spans its prompt
is made of, None when that is the whole episode before it.

So when every prompt extends the previous call's prompt and reply, the trajectory is exactly the
one the rollout loop builds for that conversation, one training segment; a call whose prompt
does not (the agent dropped, edited or summarised its history, or called twice at once) is a
training segment of its own, scored under exactly its prompt
(:func:`agentgym_core.rollout.segments.training_segments`), and still stores only what no
earlier call had. Nothing is re-rendered and nothing is stored twice.
"""
from __future__ import annotations

from dataclasses import dataclass

from agentgym_core import GenerationResult, Span, Trajectory, Turn, merge_spans


@dataclass(frozen=True)
class Placement:
    """Where a prompt goes: the stored spans it starts with, and the tokens to append after them."""

    shared: list[Span]
    rest: list[int]
    #: The call whose prompt and reply it extends in full (None: it extends none).
    extends: int | None


class TraceBuilder:
    """Builds the token sequence of one external episode call by call (see the module docstring)."""

    def __init__(self) -> None:
        self.token_ids: list[int] = []
        self.loss_mask: list[int] = []
        self.logprobs: list[float] = []
        self.turns: list[Turn] = []
        self.prompt_len = 0
        #: Per call, the spans of ``token_ids`` that are its prompt and its reply.
        self.views: list[list[Span]] = []
        #: Calls whose prompt did not extend the previous call's prompt and reply.
        self.prefix_breaks = 0

    def place(self, prompt: list[int]) -> Placement:
        """Where *prompt* would go, without storing anything (budgets are checked with it)."""
        if not self.views:
            return Placement([], list(prompt), None)
        last = len(self.views) - 1
        n = self._common(self.views[last], prompt)
        if n == _length(self.views[last]):  # extends the previous call: the usual case, one segment
            return Placement(list(self.views[last]), list(prompt[n:]), last)
        best, best_len = last, n
        for k in range(last - 1, -1, -1):  # the longest shared prefix, the latest call on a tie
            n = self._common(self.views[k], prompt)
            if n > best_len:
                best, best_len = k, n
        full = best_len == _length(self.views[best])
        return Placement(_cut(self.views[best], best_len), list(prompt[best_len:]), best if full else None)

    def _common(self, spans: list[Span], prompt: list[int]) -> int:
        """How many tokens of *prompt* the tokens of *spans* start with."""
        n = 0
        for a, b in spans:
            width = min(b - a, len(prompt) - n)
            if self.token_ids[a : a + width] != prompt[n : n + width]:
                stored = self.token_ids[a : a + width]
                return n + next(i for i in range(width) if stored[i] != prompt[n + i])
            n += width
            if width < b - a:
                break
        return n

    def add(self, prompt: list[int], result: GenerationResult, text: str) -> Turn:
        """Store one call: the part of *prompt* not stored yet (context), then the sampled ids."""
        where = self.place(prompt)
        if self.views and where.extends != len(self.views) - 1:
            self.prefix_breaks += 1
        if not self.views:
            self.prompt_len = len(prompt)
        new = len(self.token_ids)
        self._append(where.rest, [0] * len(where.rest), [0.0] * len(where.rest))
        start = len(self.token_ids)
        self._append(result.token_ids, [1] * len(result.token_ids), [float(x) for x in result.logprobs])
        context = merge_spans(where.shared + [(new, start)])
        turn = Turn(start=start, end=len(self.token_ids), text=text, action=None, kind="call")
        turn.finish_reason = result.finish_reason
        turn.prompt_tokens = len(prompt)
        turn.prefill_tokens = result.prefill_tokens
        turn.version = getattr(result, "weight_version", None)  # the weights that sampled it (asynchronous runs)
        if context != ([(0, start)] if start else []):
            turn.context = [[a, b] for a, b in context]
        self.turns.append(turn)
        self.views.append(merge_spans(context + [(start, turn.end)]))
        return turn

    def _append(self, ids: list[int], mask: list[int], logprobs: list[float]) -> None:
        self.token_ids += ids
        self.loss_mask += mask
        self.logprobs += logprobs

    def close(self, eot_ids: list[int], eot_sampled: bool) -> None:
        """End the episode after its last reply: the end-of-turn marker (loss mask 0) when the model did
        not write it and the reply is the last thing stored, as the rollout loop closes an episode."""
        if self.turns and not eot_sampled and self.turns[-1].end == len(self.token_ids):
            self._append(list(eot_ids), [0] * len(eot_ids), [0.0] * len(eot_ids))

    def fill(self, traj: Trajectory) -> None:
        """Put the tokens and turns into *traj*."""
        traj.token_ids, traj.loss_mask, traj.logprobs = self.token_ids, self.loss_mask, self.logprobs
        traj.prompt_len, traj.turns = self.prompt_len, self.turns
        traj.prefill_tokens = sum(t.prefill_tokens for t in self.turns)

    def stored_after(self, placement: Placement, reply: int) -> int:
        """Tokens stored once a prompt placed at *placement* and a reply of *reply* tokens are added."""
        return len(self.token_ids) + len(placement.rest) + reply


def _length(spans: list[Span]) -> int:
    return sum(b - a for a, b in spans)


def _cut(spans: list[Span], n: int) -> list[Span]:
    """The first *n* tokens of *spans*, as spans."""
    out = []
    for a, b in spans:
        if n <= 0:
            break
        take = min(b - a, n)
        out.append((a, a + take))
        n -= take
    return out
