"""The rule-based simulated user: states its requests one at a time, answers only what it is asked,
says yes only to a confirmation that describes the change it wants, and says when it does not
understand.

Every line is drawn from phrase pools with a generator seeded by the task, so the same agent
replies get the same answers. A goal's ``wording`` picks the pool: ``iid`` phrases for the
train and test splits, ``ood`` phrases (never seen in training) for the OOD split.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass

from . import text
from .goal import FOREIGN, Change, Goal, Lexicon
from .judge import Judge

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
    "push_back": (("Are you sure? I think that should be possible. Please check again.",),
                  ("That doesn't sound right to me; other stores do this. Could you look again?",)),
    "too_early": (("Wait, you haven't even looked at the details of my request yet.",),
                  ("Hold on, you don't know the details yet.",)),
    "accept": (("I see. Thanks for checking.", "Okay, I understand."), ("Fair enough, thanks for explaining.",)),
    "next": (("Thanks! There's one more thing.", "Great, thank you. I also need something else."),
             ("Perfect. While I have you, there's another thing.",)),
    "closing": (("Great, thank you! That's all. Bye.", "Perfect, that's all I needed. Thanks!"),
                ("Wonderful, you've been a great help. Goodbye!",)),
    "only": (("I only want to {summary}.",), ("All I want is to {summary}.",)),
    "wrong": (("No, that's not what I asked for. I want to {summary}.",), ("That's not my request: I want to {summary}.",)),
    "nothing_to_confirm": (("I haven't asked you to change anything for that.",),
                           ("There's nothing to change there, I just asked a question.",)),
}

_HELP = re.compile(r"\b(how (?:can|may) i (?:help|assist)|what can i do for you|anything else|what (?:do|would) you "
                   r"(?:need|like)|how can i be of|what brings you|what is your (?:request|question|issue)|what's the "
                   r"(?:issue|problem)|tell me (?:more|what))\b")


@dataclass
class Reply:
    text: str
    #: ``(request, change)`` the user just confirmed (the agent may now make exactly that change).
    confirms: tuple[int, int] | None = None


def description_problems(message: str, change: Change, lexicon: Lexicon) -> list[str]:
    """Why *message* does not describe *change* (empty: it does), in the user's words.

    The message must name the action (one of the tool's verbs), every mention (order, items,
    options, address, payment, ...), no other action (another tool's exclusive words, or a
    foreign one such as closing an account), and no entity id the change does not involve.
    """
    low = text.normalize(message)
    problems: list[str] = []
    own = set(lexicon.verbs.get(change.tool, ()))
    other = [w for tool, words in lexicon.exclusive.items() if tool != change.tool for w in words if w not in own]
    if any(text.has(low, w) for w in other) or any(text.has(low, w) for w in FOREIGN if w not in own):
        problems.append(f"I only want to {change.summary}.")
    labels = {m.label: m for m in change.mentions}
    for kind, (pattern, canon) in lexicon.entities.items():
        found = {canon(m) for m in pattern.findall(message)}
        if found - set(change.entities.get(kind, frozenset())):
            mention = labels.get(kind)
            problems.append(mention.correction if mention else f"I only want to {change.summary}.")
    problems += [m.correction for m in change.mentions if not any(text.has(low, p) for p in m.phrases)]
    return list(dict.fromkeys(problems))


def names_change(message: str, lexicon: Lexicon) -> list[str]:
    """The write tools whose verbs *message* uses."""
    low = text.normalize(message)
    return [tool for tool, verbs in lexicon.verbs.items() if any(text.has(low, v) for v in verbs)]


def match_confirmation(message: str, judge: Judge, lexicon: Lexicon,
                       current: int) -> tuple[tuple[int, int] | None, list[str] | None]:
    """The pending change of request *current* that *message* describes: ``((request, change), [])``;
    else ``(None, problems)`` for the closest one, or ``(None, None)`` when it names no action the
    request wants."""
    named = set(names_change(message, lexicon))
    pending = [(j, c) for j, c in judge.pending_changes(current) if c.tool in named]
    if not pending:
        return None, None
    problems, j = min(((description_problems(message, c, lexicon), j) for j, c in pending), key=lambda v: len(v[0]))
    return ((current, j), []) if not problems else (None, problems)


class RuleUser:
    """The user of *goal*, played by rules over the env's *lexicon*; ``judge`` is the episode's."""

    def __init__(self, goal: Goal, lexicon: Lexicon, rng: random.Random) -> None:
        self.goal, self.lexicon, self.rng = goal, lexicon, rng
        self.shown = 0  # the request the user has raised

    def line(self, name: str, **fields: str) -> str:
        iid, ood = LINES[name]
        return self.rng.choice(ood if self.goal.wording == "ood" and ood else iid).format(**fields)

    def opening(self, index: int = 0) -> str:
        return self.rng.choice(self.goal.requests[index].openings)

    def first_line(self) -> str:
        greeting = {"polite": "Hello! ", "chatty": "Hi there, hope your day is going well! ", "terse": ""}
        return greeting.get(self.goal.tone, "") + self.opening(0)

    def reply(self, message: str, judge: Judge, refused: list[int]) -> Reply:
        """The user's answer to *message* (*refused*: requests the judge just counted as refused)."""
        low = text.normalize(message)
        current = judge.current()
        if current is None:
            return Reply(self.line("closing"))
        if current != self.shown:  # the raised request was resolved (by a write, an answer or a refusal)
            self.shown = current
            lead = self.line("accept") if refused else self.line("next")
            return Reply(f"{lead} {self.opening(current)}")
        request = self.goal.requests[current]
        if text.asks_confirmation(message) and names_change(message, self.lexicon):
            return self._confirm(message, judge, current)
        answers = self._answers(low, current) if text.is_question(message) else []
        if answers:
            return Reply(" ".join(answers))
        if text.asks_confirmation(message):
            return Reply(self.line("what") if request.changes else self.line("nothing_to_confirm"))
        if text.is_refusal(message):
            if request.forbidden:
                return Reply(self.line("too_early"))
            return Reply(self.line("push_back"))
        if judge.changes_done(current):
            missing = [o for o in judge.missing_outputs(current) if o.record in judge.reads or request.changes]
            if missing:
                return Reply(missing[0].question)
        if _HELP.search(low):
            return Reply(self.opening(current))
        return Reply(self.line("confused"))

    def _confirm(self, message: str, judge: Judge, current: int) -> Reply:
        found, problems = match_confirmation(message, judge, self.lexicon, current)
        if found is not None:
            return Reply(self.line("yes"), confirms=found)
        if problems is None:
            wanted = judge.pending_changes(current)
            if not wanted:
                return Reply(self.line("nothing_to_confirm"))
            return Reply(self.line("wrong", summary=wanted[0][1].summary))
        return Reply(f"{self.line('no')} {' '.join(problems)}")

    def _answers(self, low: str, current: int) -> list[str]:
        out = []
        for slot in self.goal.slots(current):
            pattern = self.lexicon.asks.get(slot.name)
            if pattern is not None and pattern.search(low):
                out.append(slot.answer)
        for name, answer in self.goal.unknown.items():
            pattern = self.lexicon.asks.get(name)
            if pattern is not None and pattern.search(low) and not any(s.name == name for s in self.goal.slots(current)):
                # with other answers given, only the first sentence ("I don't remember my email.")
                out.append(answer.split(". ")[0].rstrip(".") + "." if out else answer)
        return list(dict.fromkeys(out))
