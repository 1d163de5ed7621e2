"""Questions: generated from the default corpus by fixed templates, or read from a QA file.

The generator (see the README for the method and its limits) uses each article's short
Wikidata description, which the passage text starts with:

* ``lookup`` (1 hop): "What is the name of the 1968 film by Stanley Kubrick?" -> the title.
  Only descriptions that are unique in the corpus and specific (a digit or a proper noun
  after the first word) are used, and none that contain the title.
* ``bridge`` (2 hops): a proper noun in the description that is itself an article is replaced
  by that article's unique description: "What is the name of the 1968 film by the American
  filmmaker (1928–1999)?" -> find the filmmaker, then the film.
* ``bridge_year`` (2 hops): "The encyclopedia describes Crime and Punishment as "1866 novel by
  ___". In what year was ___ born?" -> the person's birth year from their article.

Each generated question also carries a ``plan``: the searches a person would make (the
scripted solver follows it, reading answers only from what the searches return).
Everything is a pure function of the corpus file, so ids are stable. The test split holds
the questions whose answer *article* hashes to 0 mod 10, so no test answer is trained on.
"""
from __future__ import annotations

import collections
import hashlib
import re
from pathlib import Path
from typing import Any

from agentgym_core import AgentGymError

from .corpus import read_jsonl

QUESTION_TYPES = ("lookup", "bridge", "bridge_year")
_YEARS = re.compile(r"\((?:born |c\. ?)?(\d{3,4})(?: BC)?\s*(?:[–-]\s*(?:c\. ?)?\d{3,4}(?: BC)?)?\)")
_PROPER = re.compile(r"^[A-Z0-9]")
_BEFORE = {"of", "by", "in", "the", "to", "from", "and", "at", "on", "with", "for", "near", "between", "about"}
_AFTER = {"of", "by", "in", "to", "from", "and", "at", "on", "with", "for", "during", "near", "between", "who", "that"}


class QAFileError(AgentGymError):
    """The QA file is missing or malformed."""


def _stable_hash(text: str) -> int:
    return int.from_bytes(hashlib.sha1(text.encode()).digest()[:8], "big")


def _aliases(title: str) -> list[str]:
    out = [title]
    short = re.sub(r"\s*\([^)]*\)$", "", title)
    if short and short != title:
        out.append(short)
    return out


def _specific(desc: str) -> bool:
    words = desc.split()
    return len(words) >= 3 and (any(c.isdigit() for c in desc) or any(_PROPER.match(w) for w in words[1:]))


def _mentions_title(desc: str, title: str) -> bool:
    core = re.sub(r"\s*\([^)]*\)$", "", title).lower()
    return core in desc.lower()


class _Casing:
    """Whether a description's first word keeps its capital ("American") or not ("Painting")."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        counts: collections.Counter[str] = collections.Counter()
        for rec in records:
            for word in re.findall(r"(?<=[a-z,;] )[A-Za-z]+", rec["text"]):
                counts[word] += 1
        self.counts = counts

    def inline(self, desc: str) -> str:
        first, _, rest = desc.partition(" ")
        stem = re.match(r"[A-Za-z]*", first).group(0)
        if first[:1].isupper() and self.counts[stem] <= self.counts[stem.lower()]:
            first = first.lower()
        return f"{first} {rest}".strip()


def _ask(desc: str, topic: str) -> str:
    if topic == "People":
        return f"Who {'is' if '(born' in desc else 'was'} the {desc}?"
    return f"What is the name of the {desc}?"


def generate(records: list[dict[str, Any]], types: tuple[str, ...] = QUESTION_TYPES) -> list[dict[str, Any]]:
    """Questions ``{id, question, golden_answers, type, answer_title, hops, split}`` from *records*."""
    by_title = {r["title"]: r for r in records if r.get("description")}
    desc_count = collections.Counter(r["description"].lower() for r in by_title.values())
    unique = {t: r for t, r in by_title.items() if desc_count[r["description"].lower()] == 1}
    casing = _Casing(records)
    out: list[dict[str, Any]] = []

    def add(kind: str, question: str, answers: list[str], answer_title: str, via: list[str], plan: list[str]) -> None:
        split = "test" if _stable_hash(answer_title) % 10 == 0 else "train"
        out.append({"id": f"{kind}:{answer_title}:{'|'.join(via)}", "question": question,
                    "golden_answers": answers, "type": kind, "answer_title": answer_title,
                    "evidence": via + [answer_title] if kind != "bridge_year" else via,
                    "hops": 1 if kind == "lookup" else 2, "plan": plan, "split": split})

    for title in sorted(unique):
        rec = unique[title]
        desc = rec["description"]
        if "lookup" in types and _specific(desc) and not _mentions_title(desc, title):
            add("lookup", _ask(casing.inline(desc), rec["topic"]), _aliases(title), title, [], [desc])
        if "bridge" not in types and "bridge_year" not in types:
            continue
        words = desc.split()
        for i in range(1, len(words)):  # word 0 is capitalised by convention: no proper noun evidence
            for j in range(min(len(words), i + 5), i, -1):
                phrase = " ".join(words[i:j]).strip(",.;:()")
                other = unique.get(phrase)
                if other is None or phrase == title or not all(_PROPER.match(w) for w in phrase.split()):
                    continue
                if (i > 1 and _PROPER.match(words[i - 1])) or (j < len(words) and _PROPER.match(words[j])):
                    continue  # part of a longer name ("Empire" in "Ottoman Empire")
                if words[i - 1].lower() not in _BEFORE or (j < len(words) and words[j].lower() not in _AFTER
                                                           and not words[j - 1].endswith(",")):
                    continue  # a modifier ("artificial Earth satellite"), not a noun phrase of its own
                if len(phrase) < 4 or not any(c.isalpha() for c in phrase):
                    continue
                inner = other["description"]
                if _mentions_title(inner, title) or _mentions_title(inner, phrase) or len(inner.split()) < 2:
                    break
                if "bridge" in types and _specific(desc) and not _mentions_title(desc, title):
                    article = "" if words[i - 1].lower() == "the" else "the "
                    nested = desc.replace(phrase, article + casing.inline(inner), 1)
                    add("bridge", _ask(casing.inline(nested), rec["topic"]), _aliases(title), title, [phrase],
                        [inner, desc.replace(phrase, "{prev}", 1)])
                years = _YEARS.search(inner)
                if "bridge_year" in types and other.get("topic") == "People" and years:
                    blank = desc.replace(phrase, "___", 1)
                    q = f'The encyclopedia describes {title} as "{blank}". In what year was ___ born?'
                    add("bridge_year", q, [years.group(1)], phrase, [title, phrase], [title, "{blank}"])
                break
    out.sort(key=lambda q: _stable_hash(q["id"]))
    return out


def load_qa_file(path: str, default_split: str | None = None, test_every: int = 10) -> list[dict[str, Any]]:
    """Search-R1-style QA rows: ``question`` and ``golden_answers`` (a list or one string).

    A row's ``split`` field ("train"/"test") is kept; rows without one get *default_split*, or,
    when that is None, every *test_every*-th row (by position) goes to test.
    """
    file = Path(path)
    if not file.is_file():
        raise QAFileError(f"searchqa: QA file {path!r} does not exist (env option qa_file / qa_test_file)")
    rows = []
    for n, row in read_jsonl(file, QAFileError):
        answers = row.get("golden_answers", row.get("answer")) if isinstance(row, dict) else None
        if isinstance(answers, str):
            answers = [answers]
        if not isinstance(row, dict) or not row.get("question") or not answers:
            raise QAFileError(f"searchqa: {path}:{n} needs 'question' and 'golden_answers' (Search-R1 format)")
        split = row.get("split") or default_split or ("test" if len(rows) % test_every == test_every - 1 else "train")
        if split not in ("train", "test"):
            raise QAFileError(f"searchqa: {path}:{n} has split {split!r}; use 'train' or 'test'")
        rows.append({"id": str(row.get("id", f"{file.name}:{n}")), "question": str(row["question"]).strip(),
                     "golden_answers": [str(a) for a in answers], "type": row.get("type", "file"), "split": split})
    if not rows:
        raise QAFileError(f"searchqa: QA file {path} holds no questions")
    return rows
