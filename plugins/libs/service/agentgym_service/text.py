"""Reading what the agent said: statements of amounts, tokens and states, refusals, confirmation requests.

Everything here is linear in the text (literal alternations, no nested quantifiers), and
errs towards *not* counting: a reply that lists many amounts states none of them; a state
named under a negation ("it has not shipped yet") is not stated; a reply naming two states
states neither; a refusal naming many reasons gives none of them.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

#: An answer naming more than this many amounts (or tokens of one kind, or states) states none of them.
MAX_STATED = 2

#: Money: ``$12``, ``$1,250.00``, or a number with cents (``12.50``); bare integers are ids, not amounts.
_AMOUNT = re.compile(r"\$\s?(\d{1,7}(?:,\d{3})*(?:\.\d{1,2})?)(?!\d)|(?<![\w.$])(\d{1,7}(?:,\d{3})*\.\d{2})(?![\d.])")
_QUESTION = re.compile(r"\b(could you|can you|would you|please (?:give|tell|provide|share|send|confirm|let)|let me know|"
                       r"i need|i'll need|i will need|may i have|what is|what's|which)\b")
_NEGATORS = frozenset({"not", "never", "no", "isn't", "hasn't", "wasn't", "hasnt", "isnt", "wasnt", "haven't",
                       "hadn't", "didn't", "won't", "yet", "nor", "cannot", "can't", "neither"})
_REFUSAL = re.compile(
    r"\b(cannot|can ?not|can't|unable|not able|not allowed|not possible|not eligible|isn't possible|won't be able|"
    r"will not be able|am afraid|i'm afraid|against (?:our|the) policy|(?:policy|rules?) (?:does not|doesn't|do not|"
    r"don't) (?:allow|permit)|not permitted|unfortunately|no longer possible|i must decline|have to decline)\b")
_CONFIRM = re.compile(
    r"\b(confirm|shall i|should i|do you want me|would you like me|want me to|go ahead|proceed|is that (?:ok|okay|"
    r"correct|right|fine|alright)|is this (?:ok|okay|correct|right|fine)|(?:ok|okay) to|can i go|may i|sound good|"
    r"does that (?:work|sound)|are you sure|agree)\b")


def normalize(text: str) -> str:
    """Lower case, straight quotes, single spaces: what every check below reads."""
    return " ".join(str(text).replace("\u2019", "'").replace("\u2018", "'").lower().split())


def has(text: str, phrase: str) -> bool:
    """Whether normalized *text* holds *phrase* as whole words."""
    phrase = normalize(phrase)
    start = text.find(phrase)
    while start >= 0:
        end = start + len(phrase)
        if (start == 0 or not text[start - 1].isalnum()) and (end == len(text) or not text[end].isalnum()):
            return True
        start = text.find(phrase, start + 1)
    return False


def amounts(text: str) -> list[float]:
    """Every number written like an amount (``$12.50``, ``12.50``, ``1,250``)."""
    out = []
    for dollars, cents in _AMOUNT.findall(text):
        try:
            out.append(float((dollars or cents).replace(",", "")))
        except ValueError:
            continue
    return out


def states_amount(text: str, value: float) -> bool:
    """*text* states *value* (to the cent) and names at most :data:`MAX_STATED` distinct amounts."""
    found = {round(a, 2) for a in amounts(normalize(text))}
    return len(found) <= MAX_STATED and round(value, 2) in found


def states_token(text: str, token: str, kind: tuple[re.Pattern, object] | None = None) -> bool:
    """*text* names *token* and at most :data:`MAX_STATED` tokens of its *kind* (a lexicon entity: pattern,
    canonical form), both read by :func:`token_candidates` (one normalisation for matching and counting)."""
    found = token_candidates(text, token, kind)
    return str(token).lower() in found and len(found) <= MAX_STATED


def affirmed(text: str, phrases: Iterable[str]) -> bool:
    """Whether normalized *text* names one of *phrases* without a negation in the 3 words before it."""
    for phrase in phrases:
        phrase = normalize(phrase)
        start = text.find(phrase)
        while start >= 0:
            end = start + len(phrase)
            whole = (start == 0 or not text[start - 1].isalnum()) and (end == len(text) or not text[end].isalnum())
            if whole and not (set(text[max(0, start - 40):start].split()[-3:]) & _NEGATORS):
                return True
            start = text.find(phrase, start + 1)
    return False


def states_choice(text: str, value: str, vocabulary: Mapping[str, Iterable[str]]) -> bool:
    """*text* affirms *value* (one of its phrases, not negated) and affirms no other value of *vocabulary*."""
    low = normalize(text)
    named = {v for v, phrases in vocabulary.items() if affirmed(low, phrases)}
    return named == {value}


def is_refusal(text: str) -> bool:
    return bool(_REFUSAL.search(normalize(text)))


def is_question(text: str) -> bool:
    """A question or a request for information (a statement such as "refunded to your card" is neither)."""
    return "?" in text or bool(_QUESTION.search(normalize(text)))


def asks_confirmation(text: str) -> bool:
    return bool(_CONFIRM.search(normalize(text)))


# -- answers, read one way for matching and for counting -------------------------------------------
def amount_candidates(text: str) -> set[float]:
    """The distinct amounts *text* names (to the cent)."""
    return {round(a, 2) for a in amounts(normalize(text))}


def choice_candidates(text: str, vocabulary: Mapping[str, Iterable[str]]) -> set[str]:
    """The values of *vocabulary* that *text* affirms."""
    low = normalize(text)
    return {v for v, phrases in vocabulary.items() if affirmed(low, phrases)}


def flat(text: str) -> str:
    """:func:`normalize` with dashes read as spaces: ``week-3`` is ``week 3``, ``final-sale`` is ``final sale``."""
    return " ".join(normalize(text).replace("-", " ").replace("\u2013", " ").split())


def token_candidates(text: str, value: str, kind: tuple[re.Pattern, object] | None = None) -> set[str]:
    """The distinct tokens of *kind* (a lexicon entity: pattern, canonical form) that *text* names, found in
    the normalized text with dashes read as spaces (:func:`flat`), lower case: ``week-3`` is ``week 3``;
    ``week-1week-2`` and ``at09:00`` name none. With no *kind*, *value* itself when the text holds it as whole words."""
    flat_text = flat(text)
    if kind is None:
        return {value.lower()} if has(flat_text, value.lower().replace("-", " ")) else set()
    pattern, canon = kind
    return {str(canon(m)).lower() for m in pattern.findall(flat_text)}


def statements(text: str) -> list[str]:
    """The sentences of *text* that are not questions (no ``?``)."""
    return [s for s in re.split(r"(?<=[.!])\s+|\n+", str(text)) if s.strip() and "?" not in s]


def declines(text: str) -> bool:
    """Whether *text* declines: a statement (not a question) that refuses. ``I cannot find that order, could you
    check it?`` asks; ``I'm sorry, I cannot do that: it has shipped. Anything else?`` declines."""
    return any(is_refusal(s) for s in statements(text))


def reason_candidates(text: str, reasons: Mapping[str, Iterable[str]]) -> set[str]:
    """The reasons (keys of *reasons*: name -> phrases) that *text* gives: one of a reason's phrases as whole words
    in a statement of *text* (questions give none), read with dashes as spaces (:func:`flat`). ``It is a final-sale
    item.`` gives ``final_sale``; ``Is it a final-sale item?`` gives nothing."""
    said = " | ".join(flat(s) for s in statements(text))
    return {name for name, phrases in reasons.items() if any(has(said, flat(p)) for p in phrases)}
