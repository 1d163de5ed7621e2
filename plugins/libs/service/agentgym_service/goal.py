"""What a simulated user wants, hidden from the agent: requests, the facts it reveals when asked, the
changes it wants (and how a confirmation must describe them), and the answers it must be told.

A :class:`Goal` is data, built by an env's task generator; the rule-based user
(:mod:`.user`), the model-played user (:mod:`.model_user`) and the judge (:mod:`.judge`) all
read the same goal.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Slot:
    """A fact the user gives only when asked (an email, an order id, which items, ...)."""

    #: What the agent asks for: a key of the env's :attr:`Lexicon.asks`.
    name: str
    #: The fact as it appears in the answer; the judge counts the slot revealed once the user said it.
    value: str
    #: The user's sentence giving it.
    answer: str


@dataclass(frozen=True)
class Mention:
    """Something a confirmation must name: one of *phrases* (whole words, any case)."""

    label: str
    phrases: tuple[str, ...]
    #: What the user says when the confirmation leaves it out or names something else.
    correction: str


@dataclass(frozen=True)
class Change:
    """A write the user wants, as the env's canonical call, and what confirming it takes."""

    tool: str
    args: Mapping[str, Any]
    #: Every one must be named in the confirmation.
    mentions: tuple[Mention, ...] = ()
    #: Entity kind (a key of :attr:`Lexicon.entities`) -> the ids of that kind the confirmation may name;
    #: naming another (another order, item, payment method) is describing another change.
    entities: Mapping[str, frozenset[str]] = field(default_factory=dict)
    #: The user's own words for it ("return the Coffee Mug from order #W9758, refund to my gift card").
    summary: str = ""


@dataclass(frozen=True)
class Output:
    """An answer the agent must state (a refund amount, a status, a tracking number, a time)."""

    label: str
    #: ``amount`` (a number, to the cent), ``choice`` (one value of a vocabulary, affirmed, no other),
    #: or ``token`` (a string, e.g. a tracking number).
    kind: str
    value: Any
    #: The record the agent must have read before the statement counts (``order:#W9758``).
    record: str
    #: How the user asks for it when it is missing.
    question: str
    #: For ``choice``: the name of the vocabulary in :attr:`Lexicon.vocabularies`; for ``token``: of
    #: the pattern in :attr:`Lexicon.entities` that finds tokens of this kind (for the list guard).
    vocabulary: str | None = None


@dataclass(frozen=True)
class Request:
    """One thing the user wants; the user raises its requests one at a time, in order."""

    kind: str
    #: Ways the user first states it (vague: the details are slots).
    openings: tuple[str, ...]
    slots: tuple[Slot, ...] = ()
    #: The writes it needs; for a forbidden request, the writes the user asks for and the policy forbids.
    changes: tuple[Change, ...] = ()
    outputs: tuple[Output, ...] = ()
    #: The policy rule that forbids it (None: allowed). A forbidden request is resolved by a refusal
    #: (or a transfer) made after :attr:`elicit` slots were revealed and :attr:`reads` records read.
    forbidden: str | None = None
    elicit: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()


@dataclass(frozen=True)
class Goal:
    """The user of one task: who it is, how it talks, and its requests."""

    name: str
    identity: tuple[Slot, ...]
    requests: tuple[Request, ...]
    #: Answers to questions the user cannot answer ("email": "I don't remember which email I used...").
    unknown: Mapping[str, str] = field(default_factory=dict)
    #: ``polite``, ``terse`` or ``chatty``.
    tone: str = "polite"
    #: Which pool of the user's stock phrases to draw from: ``iid`` or ``ood`` (unseen wordings).
    wording: str = "iid"

    def slots(self, index: int | None) -> tuple[Slot, ...]:
        """The identity slots and those of request *index*."""
        return self.identity + (self.requests[index].slots if index is not None else ())


@dataclass(frozen=True)
class Lexicon:
    """An env's words, for the user and the judge: how questions for each slot are asked, how each
    write is named, which entity ids a text mentions, and the vocabularies of stated choices."""

    #: Slot name -> a pattern matching a question for it (on normalized, lower-case text).
    asks: Mapping[str, re.Pattern]
    #: Write tool -> words that name that action (a confirmation of a change must use one).
    verbs: Mapping[str, tuple[str, ...]]
    #: Write tool -> words that name it and no other tool (naming them confirms another change).
    exclusive: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: Entity kind -> (pattern finding its ids in raw text, canonical form of a match).
    entities: Mapping[str, tuple[re.Pattern, Callable[[str], str]]] = field(default_factory=dict)
    #: Vocabulary name -> value -> phrases that affirm it (``status``: ``shipped``: ("shipped", "on its way")).
    vocabularies: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)


#: Words that describe a change no service env makes for a user ("... and close your account?").
FOREIGN = ("close", "delete", "deactivate", "terminate", "unsubscribe", "subscribe", "upgrade", "downgrade", "fee",
           "penalty", "remove your account", "erase")
