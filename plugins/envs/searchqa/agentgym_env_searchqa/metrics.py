"""Answer scoring as in SQuAD and Search-R1: normalise, then exact match or token F1."""
from __future__ import annotations

import collections
import re
import string
import unicodedata

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation) | {"–", "—", "‘", "’", "“", "”"}


def normalize(text: str) -> str:
    """Lower case, accents folded, punctuation and articles dropped, spaces collapsed."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).lower()
    text = "".join(" " if c in _PUNCT else c for c in text)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, golden: list[str]) -> float:
    """1.0 when the normalised prediction equals a normalised golden answer, else 0.0."""
    pred = normalize(prediction)
    return float(any(pred == normalize(g) for g in golden))


def f1_score(prediction: str, golden: list[str]) -> float:
    """The best token-level F1 of the prediction against the golden answers."""
    pred = normalize(prediction).split()
    best = 0.0
    for g in golden:
        gold = normalize(g).split()
        common = sum((collections.Counter(pred) & collections.Counter(gold)).values())
        if common:
            p, r = common / len(pred), common / len(gold)
            best = max(best, 2 * p * r / (p + r))
    return best
