"""The strict verdict parser: a judge's answer is a score on the rubric's scale, or a parse failure.

Accepted, and nothing else:

* the whole answer is one JSON object ``{"score": 4, "reason": "..."}`` (``reason`` optional; a
  single fenced ```` ```json ```` block around it is allowed), the score an integer on the scale;
* the answer's last non-empty line is ``Score: 4`` (any case), the score on the scale.

For a group: ``{"scores": [4, 2, 5], "reason": "..."}`` with exactly one score per episode, or a
last line ``Scores: 4, 2, 5``. A score off the scale, a float that is not whole, a missing or
extra score, prose without the final line: each is a :class:`ParseFailure`, never a guess.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Optional

_FENCED = re.compile(r"^```(?:json)?\s*\n(.*)\n```$", re.DOTALL)
_SCORE_LINE = re.compile(r"^\**score\**\s*[:=]\s*\**\s*(-?\d+)\s*\**\s*(?:/\s*\d+)?\.?$", re.IGNORECASE)
_SCORES_LINE = re.compile(r"^\**scores\**\s*[:=]\s*(-?\d+(?:\s*,\s*-?\d+)*)\s*\.?$", re.IGNORECASE)


class ParseFailure(ValueError):
    """The judge's answer is not a verdict; the message says why."""


@dataclass(frozen=True)
class Verdict:
    #: One score per episode judged (one, for absolute scoring).
    scores: tuple[int, ...]
    reason: str = ""


def _integer(value: Any, scale: tuple[int, int]) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParseFailure(f"score {value!r} is not a number")
    if isinstance(value, float) and not value.is_integer():
        raise ParseFailure(f"score {value!r} is not an integer")
    low, high = scale
    if not low <= int(value) <= high:
        raise ParseFailure(f"score {int(value)} is off the scale {low}-{high}")
    return int(value)


def _json_object(text: str) -> Optional[dict[str, Any]]:
    fenced = _FENCED.match(text)
    body = fenced.group(1).strip() if fenced else text
    if not (body.startswith("{") and body.endswith("}")):
        return None
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ParseFailure(f"the answer looks like JSON but is not: {exc.msg}") from None
    if not isinstance(data, dict):
        return None
    return data


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def parse_verdict(text: str, scale: tuple[int, int]) -> Verdict:
    """The one score in *text* (see the module docstring); :class:`ParseFailure` otherwise."""
    text = (text or "").strip()
    if not text:
        raise ParseFailure("the answer is empty")
    data = _json_object(text)
    if data is not None:
        if "score" not in data:
            raise ParseFailure(f"the JSON answer has no 'score' (keys: {sorted(data)})")
        return Verdict((_integer(data["score"], scale),), str(data.get("reason", "")))
    found = _SCORE_LINE.match(_last_line(text))
    if not found:
        raise ParseFailure("the answer is neither a JSON object with 'score' nor ends with a 'Score: N' line")
    return Verdict((_integer(int(found.group(1)), scale),), text[: -len(_last_line(text))].strip())


def parse_group_verdict(text: str, scale: tuple[int, int], size: int) -> Verdict:
    """*size* scores in *text*, one per episode, in order; :class:`ParseFailure` otherwise."""
    text = (text or "").strip()
    if not text:
        raise ParseFailure("the answer is empty")
    data = _json_object(text)
    if data is not None:
        scores = data.get("scores")
        if not isinstance(scores, list):
            raise ParseFailure(f"the JSON answer has no 'scores' list (keys: {sorted(data)})")
        reason = str(data.get("reason", ""))
    else:
        found = _SCORES_LINE.match(_last_line(text))
        if not found:
            raise ParseFailure("the answer is neither a JSON object with 'scores' nor ends with a 'Scores: a, b, ...' line")
        scores, reason = [int(s) for s in found.group(1).split(",")], ""
    if len(scores) != size:
        raise ParseFailure(f"the answer gives {len(scores)} scores for {size} episodes")
    return Verdict(tuple(_integer(s, scale) for s in scores), reason)
