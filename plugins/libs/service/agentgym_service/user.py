"""The rule-based simulated user: states its requests one at a time, answers only what it is asked,
says yes only to a confirmation that describes the change it wants, and says when it does not
understand.

It speaks only from its :class:`~.goal.Knowledge` (who it is, what it asked for in its own words,
the parts of each change it named itself), never from the goal database or from what the policy
derives: it corrects a confirmation only on what it knows (the title, the person it named, the
date it wanted) and goes along with the agent on the rest (an owner after a rule, a slot, an
allocation, a shift), so a wrong derivation ends as a wrong database and a failed episode. It
follows the course of the conversation from the judge (which request is open, how many of its
changes were made, whether an answer came), never its verdict: its reaction to a refusal or an
answer is the same whether the agent was right.

Every line is drawn from phrase pools with a generator seeded by the task, so the same agent
replies get the same answers. A goal's ``wording`` picks the pool: ``iid`` phrases for the
train and test splits, ``ood`` phrases (never seen in training) for the OOD split.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass

from . import text
from .goal import Change, Goal, KnownChange, Knowledge, Lexicon, knowledge
from .judge import Authorization, Judge, description_problems

#: Stock phrases: name -> (iid pool, ood pool).
LINES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "yes": (("Yes, please go ahead.", "Yes, that's right.", "Yes, do it."),
            ("Correct, you can do that.", "That's exactly it, please proceed.")),
    "no": (("No, that's not right.", "No, that's not what I want."), ("Hmm, no, that isn't it.",)),
    "what": (("Go ahead with what, exactly? Please tell me the change you will make.",
              "Sorry, do what exactly? Please spell out the change first."),
             ("I'd like to hear exactly what you're going to change before I agree.",)),
    "confused": (("Sorry, I don't understand what you mean.", "I'm not sure what you're asking me."),
                 ("I'm lost, could you put that another way?", "Hmm, I don't follow.")),
    "accept": (("I see. Thanks for checking.", "Okay, I understand."), ("Fair enough, thanks for explaining.",)),
    "next": (("Okay. There's one more thing.", "Alright. I also need something else."),
             ("Right. While I have you, there's another thing.",)),
    "closing": (("Okay, that's all from me. Bye.", "That's everything I wanted to ask. Goodbye."),
                ("Alright, nothing more for today. Goodbye!",)),
    "only": (("I don't want anything else, just what I asked for.",), ("Nothing more than what I asked for, please.",)),
    "wrong": (("No, that's not what I asked for. {wish}",), ("That's not my request. {wish}",)),
    "nothing_to_confirm": (("I haven't asked you to change anything for that.",),
                           ("There's nothing to change there, I just asked a question.",)),
}

_HELP = re.compile(r"\b(how (?:can|may) i (?:help|assist)|what can i do for you|anything else|what (?:do|would) you "
                   r"(?:need|like)|how can i be of|what brings you|what is your (?:request|question|issue)|what's the "
                   r"(?:issue|problem)|tell me (?:more|what))\b")


@dataclass
class Reply:
    text: str
    #: The yes the user just gave (the agent may now make the change it described).
    confirms: Authorization | None = None


def names_change(message: str, lexicon: Lexicon) -> list[str]:
    """The write tools whose verbs *message* uses."""
    low = text.normalize(message)
    return [tool for tool, verbs in lexicon.verbs.items() if any(text.has(low, v) for v in verbs)]


def known_problems(message: str, change: KnownChange, lexicon: Lexicon, only: str) -> list[str]:
    """Why *message* does not describe *change* as far as the user knows it (empty: it does)."""
    return description_problems(message, Change(change.tool, {}, change.mentions, change.entities), lexicon,
                                mentions=change.mentions, entities=change.entities, only=only)


def match_confirmation(message: str, known: Knowledge, judge: Judge, lexicon: Lexicon, current: int,
                       only: str = "") -> tuple[Authorization | None, list[str] | None]:
    """The yes *message* earns for request *current*: ``(authorization, [])``; else ``(None, problems)`` in the
    user's words, or ``(None, None)`` when it names no action the request wants."""
    request = known.requests[current]
    named = [t for t in names_change(message, lexicon) if any(c.tool == t for c in request.changes)]
    if not named:
        return None, None
    left = [(j, request.changes[j]) for j in judge.unmade(current) if request.changes[j].tool in named]
    if not left:  # an action of the request, none of that kind left: the user goes along (an extra write fails)
        return Authorization(current, None, named[0], message), []
    problems, j = min(((known_problems(message, c, lexicon, only), j) for j, c in left), key=lambda v: len(v[0]))
    if problems:
        return None, problems
    return Authorization(current, j, request.changes[j].tool, message), []


class RuleUser:
    """The user of *goal*, played by rules over the env's *lexicon*; it keeps only its :class:`Knowledge`."""

    def __init__(self, goal: Goal | Knowledge, lexicon: Lexicon, rng: random.Random) -> None:
        self.known = goal if isinstance(goal, Knowledge) else knowledge(goal)
        self.lexicon, self.rng = lexicon, rng
        self.shown = 0  # the request the user has raised

    def line(self, name: str, **fields: str) -> str:
        iid, ood = LINES[name]
        return self.rng.choice(ood if self.known.wording == "ood" and ood else iid).format(**fields)

    def opening(self, index: int = 0) -> str:
        return self.rng.choice(self.known.requests[index].openings)

    def first_line(self) -> str:
        greeting = {"polite": "Hello! ", "chatty": "Hi there, hope your day is going well! ", "terse": ""}
        return greeting.get(self.known.tone, "") + self.opening(0)

    def reply(self, message: str, judge: Judge, refused: list[int]) -> Reply:
        """The user's answer to *message* (*refused*: requests the agent's message just refused)."""
        low = text.normalize(message)
        current = judge.current()
        if current is None:
            return Reply(self.line("closing"))
        if current != self.shown:  # the raised request closed (its changes made and answers given, or refused)
            self.shown = current
            lead = self.line("accept") if refused else self.line("next")
            return Reply(f"{lead} {self.opening(current)}")
        request = self.known.requests[current]
        if text.asks_confirmation(message) and names_change(message, self.lexicon):
            return self._confirm(message, judge, current)
        answers = self._answers(low, current) if text.is_question(message) else []
        if answers:
            return Reply(" ".join(answers))
        if text.asks_confirmation(message):
            return Reply(self.line("what") if request.changes else self.line("nothing_to_confirm"))
        if judge.changes_made(current):
            waiting = judge.unanswered(current)
            if waiting:
                return Reply(waiting[0].question)
        if _HELP.search(low):
            return Reply(self.opening(current))
        return Reply(self.line("confused"))

    def _confirm(self, message: str, judge: Judge, current: int) -> Reply:
        found, problems = match_confirmation(message, self.known, judge, self.lexicon, current, self.line("only"))
        if found is not None:
            return Reply(self.line("yes"), confirms=found)
        if problems is None:
            if not self.known.requests[current].changes:
                return Reply(self.line("nothing_to_confirm"))
            return Reply(self.line("wrong", wish=self.opening(current)))
        return Reply(f"{self.line('no')} {' '.join(problems)}")

    def _answers(self, low: str, current: int) -> list[str]:
        out = []
        for slot in self.known.slots(current):
            pattern = self.lexicon.asks.get(slot.name)
            if pattern is not None and pattern.search(low):
                out.append(slot.answer)
        for name, answer in self.known.unknown.items():
            pattern = self.lexicon.asks.get(name)
            if pattern is not None and pattern.search(low) and not any(s.name == name for s in self.known.slots(current)):
                # with other answers given, only the first sentence ("I don't remember my email.")
                out.append(answer.split(". ")[0].rstrip(".") + "." if out else answer)
        return list(dict.fromkeys(out))
