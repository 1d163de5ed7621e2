"""The judge: what the agent has done and said in an episode, and whether the user's goal is met.

It follows the episode from the outside (records read, slots the user revealed, answers
stated, refusals, changes made) and decides success from the final database and what was
said, never from the user's words: a rule-based and a model-played user are judged alike.

- an answer counts once stated after its record was read (:mod:`.text`: a list of many amounts
  states none; a negated state is not that state);
- a refusal counts for a forbidden request only after the request was elicited (its slots
  revealed by the user, its records read by the agent);
- a write counts when it equals a wanted change of an allowed request.
"""
from __future__ import annotations

from typing import Any

from . import text
from .goal import Change, Goal, Lexicon, Output, Slot


class Judge:
    def __init__(self, goal: Goal, lexicon: Lexicon) -> None:
        self.goal, self.lexicon = goal, lexicon
        self.reads: set[str] = set()
        #: ``(request index or -1 for identity, slot name)`` of every slot the user has said.
        self.revealed: set[tuple[int, str]] = set()
        self.told: set[tuple[int, str]] = set()
        self.done: set[tuple[int, int]] = set()
        self.refused: set[int] = set()
        #: The change the user confirmed last and that was not made yet: ``(request, change)``.
        self.authorized: tuple[int, int] | None = None

    # -- listening -----------------------------------------------------------------------------
    def hear_user(self, line: str) -> None:
        low = text.normalize(line)
        for index, slots in [(-1, self.goal.identity)] + list(enumerate(r.slots for r in self.goal.requests)):
            for slot in slots:
                if (index, slot.name) not in self.revealed and text.has(low, slot.value):
                    self.revealed.add((index, slot.name))

    def hear_agent(self, message: str) -> list[int]:
        """Count the answers *message* states and the refusal it makes; returns the requests it refused."""
        for index, request in enumerate(self.goal.requests):
            for output in request.outputs:
                key = (index, output.label)
                if key not in self.told and output.record in self.reads and self.states(message, output):
                    self.told.add(key)
        if not text.is_refusal(message):
            return []
        refused = [i for i in self.elicited_forbidden() if i not in self.refused]
        self.refused.update(refused)
        return refused

    def states(self, message: str, output: Output) -> bool:
        if output.kind == "amount":
            return text.states_amount(message, float(output.value))
        if output.kind == "choice":
            return text.states_choice(message, output.value, self.lexicon.vocabularies[output.vocabulary])
        kind = self.lexicon.entities.get(output.vocabulary or "")
        return text.states_token(message, str(output.value), kind[0] if kind else None)

    # -- state ---------------------------------------------------------------------------------
    def is_revealed(self, index: int, slot: Slot) -> bool:
        return (index, slot.name) in self.revealed

    def elicited_forbidden(self) -> list[int]:
        """Unrefused forbidden requests whose slots were revealed and records read (a refusal now counts)."""
        return [i for i, r in enumerate(self.goal.requests) if r.forbidden and i not in self.refused
                and all((i, name) in self.revealed for name in r.elicit) and all(k in self.reads for k in r.reads)]

    def missing_outputs(self, index: int) -> list[Output]:
        return [o for o in self.goal.requests[index].outputs if (index, o.label) not in self.told]

    def pending_changes(self, index: int) -> list[tuple[int, Change]]:
        return [(j, c) for j, c in enumerate(self.goal.requests[index].changes) if (index, j) not in self.done]

    def changes_done(self, index: int) -> bool:
        return self.goal.requests[index].forbidden is not None or not self.pending_changes(index)

    def resolved(self, index: int) -> bool:
        request = self.goal.requests[index]
        if request.forbidden:
            return index in self.refused and not self.missing_outputs(index)
        return self.changes_done(index) and not self.missing_outputs(index)

    def current(self) -> int | None:
        """The first request not resolved yet (None: every one is)."""
        return next((i for i in range(len(self.goal.requests)) if not self.resolved(i)), None)

    def wanted(self, tool: str, args: dict[str, Any]) -> tuple[int, int] | None:
        """The not-yet-made change of an allowed request equal to ``tool(**args)``."""
        for i, request in enumerate(self.goal.requests):
            if request.forbidden:
                continue
            for j, change in self.pending_changes(i):
                if change.tool == tool and dict(change.args) == args:
                    return i, j
        return None

    def transferred(self) -> bool:
        """A transfer to a human refuses the current request if it is an elicited forbidden one."""
        current = self.current()
        if current is not None and current in self.elicited_forbidden():
            self.refused.add(current)
            return True
        return False

    def summary(self) -> dict[str, Any]:
        """What the end-of-episode info says about the goal (only ever shown once the episode is over)."""
        return {"requests": len(self.goal.requests),
                "resolved": sum(self.resolved(i) for i in range(len(self.goal.requests))),
                "outputs_missing": [f"{self.goal.requests[i].kind}:{o.label}" for i in range(len(self.goal.requests))
                                    for o in self.missing_outputs(i)]}
