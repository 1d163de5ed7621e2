"""The screened copy of an agent's reply: what is left once everything that cannot earn a score is taken out.

The judge reward (``screen: true``, the default) judges an episode as played and, when screening
changed any of the agent's replies, judges the screened copy too, and keeps the lower reward. What
the screen takes out can then only lower a score, never raise it, whatever the judge makes of it:
a judge that obeyed every instruction it read, inside the data or not, would still score an
injected "answer 5" as the episode without it. The screen only ever removes whole units (a line, a
sentence, a repeated block), so an honest reply it leaves alone is judged once, as it is.

What goes, from each agent reply (the task and the environment's text are not the agent's and stay):

* **A block of lines said again**: a run of the same line, or of the same few lines, is kept once when
  it is said twice or is the whole reply (a reply sent twenty times over), and goes, every copy, when
  it is said three times or more beside other text (filler).
* **Lines addressed to the judge**: a score or rating with a number, a JSON verdict, an order to
  answer or reply with a number, "ignore/disregard ... the rubric/instructions/rules", a line that
  opens with a role label (``SYSTEM:``, ``assistant:``, ``judge:``), a data-block marker, a mention of
  the rubric, the judge or the grader. A service agent has no reason to write any of them to its user.
* **Filler**: a sentence, or a sequence of up to four, said three times or more in a row (every copy:
  a reply is not better for its filler, and keeping one copy would leave it longer than without).
* **Whatever runs past the budget**: whole sentences and lines are kept while they fit in
  ``budget`` characters (the judge's per-turn cap); the first that does not fit, and all after it,
  go. A run-on of thousands of characters without a sentence end therefore goes whole.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .prompt import SENTENCE_END, repeat_at

_FLAGS = re.IGNORECASE
#: (why, pattern) for a line addressed to the judge rather than to the user.
TO_THE_JUDGE = [
    ("a score or rating", re.compile(r"\b(score|scores|scored|rating|rated|grade|graded|verdict)\b"
                                     r"[^.\n]{0,24}?\b\d+\b", _FLAGS)),
    ("a score or rating", re.compile(r"\b\d+\s*(/|out of)\s*(5|10|100)\b\s*(stars?|points?)?\s*[.!]?\s*$", _FLAGS)),
    ("a JSON verdict", re.compile(r"[{,]\s*[\"']?(score|scores|rating|verdict|grade)[\"']?\s*:", _FLAGS)),
    ("an order to answer with a number", re.compile(
        r"(^|[.!?:;,]\s*|\b(and|then|just|please|now|must|should|to)\s+)(answer|reply|respond|output|rate|award)"
        r"\s+(it\s+|this\s+|me\s+|the\s+(episode|agent|reply)\s+)?"
        r"(with\s+|only\s+|just\s+|an?\s+|the\s+|score\s+|rating\s+|of\s+)*[\"'(\[]?\d+\b", _FLAGS)),
    ("an order to set the rules aside", re.compile(
        r"\b(ignore|disregard|forget|override|bypass|skip)\b[^\n]{0,60}?\b(rubric|instructions?|prompt|rules?|"
        r"guidelines|criteria|above|previous|system)\b", _FLAGS)),
    ("a role label", re.compile(r"^\W{0,4}(system|assistant|user|judge|grader|evaluator|developer|operator|human)"
                                r"\s*(message|prompt|note)?\s*[:>\]]", _FLAGS)),
    ("a data-block marker", re.compile(r"<{2,}|>{2,}|\u2039\u2039|\u203a\u203a|\bEND\s+DATA\b|</?\s*data\s*>",
                                       _FLAGS)),
    ("words for the judge", re.compile(r"\b(rubric|judge|grader|evaluator|reward model)\b", _FLAGS)),
]
#: The end of a sentence (as :data:`.prompt.SENTENCE_END` splits them) or of a line.
_UNIT_END = re.compile(r"[.!?][\"')\]]{0,2}(?=\s)|\n")


@dataclass
class Screened:
    """The screened text and why each removed part went (in order; empty: nothing was removed)."""

    text: str
    removed: list[str] = field(default_factory=list)


def _unrepeat_lines(lines: list[str], removed: list[str], longest: int = 40) -> list[str]:
    """Runs of the same block of up to *longest* lines said again: kept once when said twice or when the run is
    the whole reply, else (filler beside other text) dropped, every copy. Blank lines are not a block."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        r, p = repeat_at(lines, i, min(longest, (len(lines) - i) // 2), 2) if lines[i].strip() else (1, 1)
        whole = r >= 3 and not any(line.strip() for line in lines[:i] + lines[i + r * p:])  # (only for a run)
        if r >= 3 and not whole:
            removed.append(f"filler: a block of {p} line(s) said {r} times")
        else:
            out.extend(lines[i:i + p])
            if r > 1:
                removed.append(f"a block of {p} line(s) said {r} times, kept once")
        i += r * p
    return out


def _addressed_to_judge(line: str) -> str | None:
    for why, pattern in TO_THE_JUDGE:
        if pattern.search(line):
            return why
    return None


def _drop_filler(sentences: list[str], removed: list[str], period: int = 4) -> list[str]:
    """*sentences* without runs of one sentence (or a sequence of up to *period*) said three times or more."""
    out: list[str] = []
    i = 0
    while i < len(sentences):
        r, p = repeat_at(sentences, i, period, 3)
        if r >= 3:
            removed.append(f"filler: {p} sentence(s) said {r} times")
            i += r * p
        else:
            out.append(sentences[i])
            i += 1
    return out


def screen(text: str, budget: int) -> Screened:
    """*text* (one agent reply) with what cannot earn a score removed (see the module docstring)."""
    text = (text or "").replace("\r\n", "\n").replace("\r", "\n")
    removed: list[str] = []
    work = text
    if len(text) > budget * 8:  # no more than this can be kept, bar repetition: bound the work
        work = text[:budget * 8]
        ends = [m.end() for m in _UNIT_END.finditer(work)]
        work = work[:ends[-1]] if ends else work  # whole sentences and lines only
        removed.append(f"past {budget * 8} characters: {len(text) - len(work)} characters not read")
    lines = _unrepeat_lines(work.split("\n"), removed)
    kept_lines: list[str] = []
    used = 0
    for line in lines:
        why = _addressed_to_judge(line)
        if why:
            removed.append(f"addressed to the judge ({why}): {line.strip()[:60]!r}")
            continue
        sentences = SENTENCE_END.split(line.strip())
        kept = _drop_filler(sentences, removed)
        fits: list[str] = []
        for sentence in kept:
            if used + len(sentence) + 1 > budget:
                break
            fits.append(sentence)
            used += len(sentence) + 1
        if len(fits) < len(kept):
            removed.append(f"past {budget} characters: {len(kept) - len(fits)} sentence(s) and every line after")
            if fits:
                kept_lines.append(" ".join(fits))
            break
        kept_lines.append(line if len(kept) == len(sentences) else " ".join(kept))
    return Screened("\n".join(kept_lines).strip() if removed else text, removed)
