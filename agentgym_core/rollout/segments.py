"""Training segments: the sequences an episode's replies are scored under.

A reply is trained under the exact context it was sampled from (``Turn.context``). Consecutive
replies whose contexts extend each other (each turn's context is the previous one's, plus that
reply and the user message after it) form one *segment*: one training sequence in which all of
them are scored, as the whole episode is with the full history. A reply whose context does not
extend the previous segment (a history window moved, a pinned plan, any context policy) starts a
new segment: its context as the prompt (not trained), then its reply.

Segments are spans of the episode's tokens, so nothing is stored twice; ``positions`` maps a
segment's tokens back to the episode. With the full history an episode is one segment that
starts at token 0: the update then runs the episode exactly as it always did.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .context import Span, merge_spans


@dataclass(frozen=True)
class Segment:
    """Tokens ``token_ids[a:b]`` for each span, in order; the replies of ``turns`` are trained in it."""

    spans: tuple[Span, ...]
    turns: tuple[int, ...]

    @property
    def length(self) -> int:
        return sum(b - a for a, b in self.spans)

    def positions(self) -> list[int]:
        """The episode position of each of the segment's tokens."""
        return [i for a, b in self.spans for i in range(a, b)]

    def is_prefix(self) -> bool:
        """True when the segment is a prefix of the episode (no token left out before its end)."""
        return len(self.spans) == 1 and self.spans[0][0] == 0


def turn_context(turn: Any) -> list[Span]:
    """The spans turn *turn*'s reply was sampled from (the whole episode before it when not recorded)."""
    if turn.context is None:
        return [(0, turn.start)] if turn.start > 0 else []
    return merge_spans([(int(a), int(b)) for a, b in turn.context])


def training_segments(traj: Any) -> list[Segment]:
    """The segments of *traj* (a :class:`~agentgym_core.rollout.Trajectory`), in turn order."""
    segments: list[Segment] = []
    spans: list[Span] = []
    turns: list[int] = []
    for k, turn in enumerate(traj.turns):
        context = turn_context(turn)
        if turns:
            end = spans[-1][1]
            if merge_spans(spans + [(end, turn.start)]) == context:
                spans = merge_spans(spans + [(end, turn.end)])
                turns.append(k)
                continue
            segments.append(Segment(tuple(spans), tuple(turns)))
        spans, turns = merge_spans(context + [(turn.start, turn.end)]), [k]
    if turns:
        segments.append(Segment(tuple(spans), tuple(turns)))
    return segments


def needs_segments(traj: Any) -> bool:
    """True when some reply of *traj* was sampled from a context that is not the episode before it."""
    return any(t.context is not None for t in traj.turns)
