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

from .text import flat, has, normalize


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
    #: (or a transfer) made after :attr:`elicit` slots were revealed and :attr:`reads` records read,
    #: that gives one of its :attr:`reasons`.
    forbidden: str | None = None
    elicit: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    #: Why the policy forbids it: names of the env's :attr:`Lexicon.reasons` (each true of this request); a refusal
    #: resolves it only when it states one of them and the agent named at most :data:`~.text.MAX_STATED` reasons
    #: while the request was open.
    reasons: tuple[str, ...] = ()


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


# -- what the user knows ---------------------------------------------------------------------------
@dataclass(frozen=True)
class KnownChange:
    """What the user knows of a change it wants: the action and the parts it asked for itself."""

    tool: str
    #: The mentions the user can check (each has a phrase the user itself says or was told by its own request).
    mentions: tuple[Mention, ...]
    #: Entity kind -> the ids of that kind the user knows the change involves (only kinds whose every id it knows).
    entities: Mapping[str, frozenset[str]]


@dataclass(frozen=True)
class KnownOutput:
    """An answer the user waits for: how it asks, and what kind of answer it is (never the value)."""

    label: str
    kind: str
    question: str
    vocabulary: str | None = None


@dataclass(frozen=True)
class KnownRequest:
    kind: str
    openings: tuple[str, ...]
    slots: tuple[Slot, ...]
    changes: tuple[KnownChange, ...]
    outputs: tuple[KnownOutput, ...]
    #: Whether there is something to refuse: the request asks for an action (a question is answered, not refused).
    acts: bool


@dataclass(frozen=True)
class Knowledge:
    """The simulated user's own record: its identity, its requests in its own words, and the parts of each
    wanted change that it stated itself. It holds no policy-derived value (an owner after a rule, a slot,
    an allocation, dependency ids, a shift, an amount): those are in the :class:`Goal` only, which the
    judge reads and the user does not. Built by :func:`knowledge`."""

    name: str
    identity: tuple[Slot, ...]
    requests: tuple[KnownRequest, ...]
    unknown: Mapping[str, str]
    tone: str
    wording: str
    #: Everything the user could say, normalized (what "known" is checked against).
    text: str

    def slots(self, index: int | None) -> tuple[Slot, ...]:
        return self.identity + (self.requests[index].slots if index is not None else ())


def own_words(goal: Goal, index: int) -> str:
    """What the user of *goal* says of request *index* itself: the request's openings and details (not its
    identity: that the user's own name is in an email does not tell it who owns an action item)."""
    request = goal.requests[index]
    parts = list(request.openings) + [s.answer for s in request.slots] + [s.value for s in request.slots]
    return normalize(" | ".join(parts))


def knowledge(goal: Goal) -> Knowledge:
    """The user's :class:`Knowledge` of *goal*: a mention is known when one of its phrases is in the user's own
    words for that request (:func:`own_words`); an entity kind when every id of it is."""
    requests, texts = [], []
    for index, request in enumerate(goal.requests):
        words = own_words(goal, index)
        texts.append(words)
        changes = tuple(KnownChange(
            c.tool, tuple(m for m in c.mentions if any(has(words, p) for p in m.phrases)),
            {kind: ids for kind, ids in c.entities.items() if ids and all(has(words, i) for i in ids)})
            for c in request.changes)
        outputs = tuple(KnownOutput(o.label, o.kind, o.question, o.vocabulary) for o in request.outputs)
        requests.append(KnownRequest(request.kind, request.openings, request.slots, changes, outputs,
                                     bool(request.changes) or request.forbidden is not None))
    mine = [s.answer for s in goal.identity] + [s.value for s in goal.identity] + [goal.name]
    return Knowledge(goal.name, goal.identity, tuple(requests), dict(goal.unknown), goal.tone, goal.wording,
                     " | ".join(texts + [normalize(" | ".join(mine + list(goal.unknown.values())))]))


def derived_values(goal: Goal, lexicon: "Lexicon") -> set[str]:
    """Every value of *goal* the policy derives and the user does not know: phrases of unknown mentions, ids of
    entity kinds the user does not know, and every answer's value (normalized). For the test that scans what
    the user says."""
    mine = knowledge(goal)
    known, said = mine.text, set()
    for request in mine.requests:  # what the user may say: its known mentions, whole (a full name for a first name)
        for change in request.changes:
            said.update(normalize(p) for m in change.mentions for p in m.phrases)
            said.update(normalize(i) for ids in change.entities.values() for i in ids)
    out: set[str] = set()
    for request in goal.requests:
        for change in request.changes:
            out.update(normalize(p) for m in change.mentions for p in m.phrases)
            out.update(normalize(i) for ids in change.entities.values() for i in ids)
        for output in request.outputs:
            if output.kind != "choice":  # a choice's values are a vocabulary everyone knows ("shipped")
                out.add(normalize(f"{output.value:.2f}" if output.kind == "amount" else output.value))
        if request.forbidden:  # why the policy forbids it: the agent finds it out, the user never says it
            out.update(flat(p) for name in request.reasons for p in lexicon.reasons.get(name, ()))
    return {v for v in out - said if v and not has(known, v)}


def reason_leaks(goal: Goal, lexicon: "Lexicon") -> list[tuple[int, str]]:
    """``(request index, reason)`` for each forbidden request whose own words (its openings and the details the user
    gives, :func:`own_words`) state one of its reasons: a user that would tell the agent why to refuse. Empty: none."""
    out = []
    for i, request in enumerate(goal.requests):
        words = flat(" | ".join(request.openings + tuple(s.answer for s in request.slots)))
        out += [(i, name) for name in request.reasons if request.forbidden
                and any(has(words, flat(p)) for p in lexicon.reasons.get(name, ()))]
    return out


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
    #: Every reason the policy gives to refuse: name -> phrases that state it (``final_sale``: ("final sale", ...)),
    #: read in the agent's statements with dashes as spaces (:func:`~.text.reason_candidates`). A forbidden request's
    #: :attr:`Request.reasons` name some of them; the policy's text must use a phrase of each.
    reasons: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


#: Words that describe a change no service env makes for a user ("... and close your account?").
FOREIGN = ("close", "delete", "deactivate", "terminate", "unsubscribe", "subscribe", "upgrade", "downgrade", "fee",
           "penalty", "remove your account", "erase")
