"""Context policies: what the model sees of an episode when it writes its next reply.

The episode keeps every token it ever had (that is the trajectory); a context policy picks
*spans* of those tokens, in order, as the model's prompt for the next reply. The rollout
records each reply's spans (``Turn.context``) and the trainer scores the reply under exactly
that prompt, so what the update trains is the policy the agent ran.

A policy is a component like a strategy: registered through ``register_context_policies``,
selected by ``agent.context`` (``agent.context: {name: window, turns: 2}``), its options a
``Config`` dataclass. Core ships two:

* ``full`` (the default): the whole episode so far. Every turn extends the previous one, so an
  episode is one training sequence and the engine reuses one KV cache all the way.
* ``window``: the initial prompt, a pinned turn (a strategy's plan) and the last ``turns``
  turns. ``chunked: true`` moves the window in steps of ``turns`` (it keeps between ``turns``
  and ``2 * turns - 1`` turns): consecutive replies then extend the same context, so they share
  a KV cache in rollout and one training segment in the update; the exact window re-prefills
  and is a segment of its own at every turn.

A third party writes ``spans(view)``: see :class:`ContextPolicy` and docs/rollout.md.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

from ..config_schema import check_range
from ..errors import AgentGymError
from ..options import config_from

Span = tuple[int, int]


@dataclass(frozen=True)
class EpisodeView:
    """What a context policy sees of an episode when the model is about to reply.

    Turn *k*'s tokens are ``token_ids[turn_starts[k]:turn_end(k)]``: its reply, then the user
    message that followed it (the observation, the template's generation prompt). Tokens
    ``[0, prompt_len)`` are the initial prompt (system, instruction, first observation).
    """

    token_ids: Sequence[int]
    prompt_len: int
    turn_starts: tuple[int, ...]
    #: Each turn's kind: ``action`` or a strategy's own (``plan``).
    kinds: tuple[str, ...] = ()
    #: The turn a strategy keeps in view however far back it lies (None: none).
    pinned: Optional[int] = None

    @property
    def length(self) -> int:
        return len(self.token_ids)

    @property
    def num_turns(self) -> int:
        return len(self.turn_starts)

    def turn_end(self, k: int) -> int:
        """Where turn *k*'s tokens (reply and the user message after it) end."""
        return self.turn_starts[k + 1] if k + 1 < len(self.turn_starts) else self.length

    def turns_span(self, first: int) -> Span:
        """Turns ``first`` .. the latest, with the user message the model answers next."""
        return (self.turn_starts[first], self.length) if first < self.num_turns else (self.length, self.length)


class ContextPolicy:
    """The ``full`` policy: the model sees the whole episode. Subclass and override :meth:`spans`.

    ``spans`` returns increasing, non-overlapping ``(start, end)`` token spans of the episode;
    their concatenation is the model's prompt. The last span must end at ``view.length`` (the
    user message being answered, with the generation prompt). A subclass takes its ``Config``
    fields as keyword arguments.
    """

    @dataclass
    class Config:
        pass

    name: str = "full"

    def __init__(self, **options: object) -> None:
        self.config = config_from(self, options)

    def spans(self, view: EpisodeView) -> list[Span]:
        return [(0, view.length)]

    def describe(self) -> str:
        """One line for logs: the policy and its options."""
        opts = ", ".join(f"{k}={v}" for k, v in vars(self.config).items())
        return f"{self.name}({opts})" if opts else self.name


class WindowContext(ContextPolicy):
    """The initial prompt, the pinned turn and the last ``turns`` turns (``chunked``: see the module)."""

    @dataclass
    class Config:
        #: Turns kept besides the initial prompt (and a pinned turn, which takes no place).
        turns: int = 2
        #: Move the window in steps of ``turns`` (keep ``turns`` .. ``2 * turns - 1``) instead of every turn.
        chunked: bool = False

        def __post_init__(self) -> None:
            check_range("agent.context.turns", self.turns, ge=1, note="turns kept in view")

    name = "window"

    def first_kept(self, view: EpisodeView) -> int:
        """The first turn in view (pinned aside)."""
        n, k = view.num_turns, self.config.turns
        if n <= k:
            return 0
        if self.config.chunked:
            return (n - k) // k * k
        return n - k

    def spans(self, view: EpisodeView) -> list[Span]:
        first = self.first_kept(view)
        p = view.pinned
        if p is not None and p >= first and first > 0 and not self.config.chunked:
            first -= 1  # a pinned turn inside the window does not take one of its places
        if first == 0:
            return [(0, view.length)]
        out: list[Span] = [(0, view.prompt_len)]
        if p is not None and p < first:  # out of the window: its reply and what followed it
            out.append((view.turn_starts[p], view.turn_end(p)))
        out.append(view.turns_span(first))
        return merge_spans(out)


def merge_spans(spans: Sequence[Span]) -> list[Span]:
    """Drop empty spans and join touching ones: ``[(0, 5), (5, 9), (12, 12)] -> [(0, 9)]``."""
    out: list[Span] = []
    for a, b in spans:
        if b <= a:
            continue
        if out and out[-1][1] == a:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def check_spans(spans: Sequence[Span], length: int, policy: str) -> list[Span]:
    """*spans* merged, or an error naming *policy* when they are not a valid prompt of an episode of *length*."""
    merged = merge_spans([(int(a), int(b)) for a, b in spans])
    if not merged:
        raise AgentGymError(f"context policy {policy!r} gave no tokens: a prompt needs at least the last user message")
    previous = 0
    for a, b in merged:
        if a < previous or b > length:
            raise AgentGymError(
                f"context policy {policy!r} gave spans {list(spans)}: they must be increasing, non-overlapping "
                f"and within the episode's {length} tokens")
        previous = b
    if merged[-1][1] != length:
        raise AgentGymError(
            f"context policy {policy!r} gave spans {list(spans)} that end at token {merged[-1][1]}, not at the "
            f"episode's end ({length}): the model must see the user message it answers")
    return merged


def window_or_full(history_window: int) -> ContextPolicy:
    """The policy ``agent.history_window: K`` stands for (``window`` of K turns; 0: ``full``)."""
    return WindowContext(turns=history_window) if history_window > 0 else ContextPolicy()
