"""Reading the agent's replies for the reward: was a fact told, is this a refusal.

The store state decides most of the reward (compared with ``==``); these checks decide the
rest: every fact the customer asked for (a status, a tracking number, an amount) appears in
a reply, and a forbidden request was refused in words or transferred.
"""
from __future__ import annotations

import re

STATUS_WORDS = {"pending": ("pending",), "shipped": ("shipped",), "delivered": ("delivered",),
                "cancelled": ("cancelled", "canceled")}
_AMOUNT = re.compile(r"(?<![\w.])\$?\s?(\d{1,6}(?:,\d{3})*(?:\.\d{1,2})?)(?![\d])")
_REFUSAL = re.compile(
    r"\b(cannot|can ?not|can't|unable|not able|not allowed|not possible|not eligible|isn't possible|"
    r"won't be able|will not be able|am afraid|i'm afraid|against (our|the) policy|(policy|rules?) "
    r"(does not|doesn't|do not|don't) (allow|permit)|not permitted|no longer be)\b",
    re.IGNORECASE)


def amounts(text: str) -> list[float]:
    return [float(m.replace(",", "")) for m in _AMOUNT.findall(text)]


def told(fact: tuple[str, str], text: str) -> bool:
    """Whether reply *text* tells *fact* (``("status", "shipped")``, ``("refund", "$54.20")``, ...).

    A status counts only when no other status is named in the same reply, so listing every
    status is not telling one.
    """
    what, value = fact
    lower = text.lower()
    if what == "status":
        named = {s for s, words in STATUS_WORDS.items() if any(re.search(rf"\b{w}\b", lower) for w in words)}
        return named == {value}
    if what == "tracking":
        return value in re.sub(r"[\s-]", "", text)
    target = float(value.lstrip("$"))
    return any(abs(a - target) < 0.005 for a in amounts(text))


def is_refusal(text: str) -> bool:
    return bool(_REFUSAL.search(text.replace("\u2019", "'")))
