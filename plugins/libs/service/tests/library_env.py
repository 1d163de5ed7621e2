"""A small env on the kit for its tests: a library desk where a member renews or returns loans.

Two members (one the user), each with loans; the user wants a loan renewed, and sometimes a
second one renewed that is overdue, which the policy forbids. Written only from the kit's
public API, the way an env plugin uses it.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass

from agentgym_service.db import Database, Table, as_json
from agentgym_service.desk import Desk, PrivacyError, ToolError
from agentgym_service.env import ServiceEnv, Task, instruction
from agentgym_service.goal import Change, Goal, Lexicon, Mention, Output, Request, Slot
from agentgym_service.tools import Param, Tool, ToolSet


@dataclass
class Member:
    card: str
    name: str
    loans: list[str]


@dataclass
class Loan:
    loan_id: str
    card: str
    title: str
    due: int
    overdue: bool
    renewed: bool = False


TOOLS = ToolSet((
    Tool("respond", "talk to the member", (Param("message", "what to say"),), kind="respond"),
    Tool("identify", "authenticate the member by library card", (Param("card", "card number"),), kind="auth"),
    Tool("get_loan", "a loan of the member", (Param("loan_id", "such as L12"),)),
    Tool("renew_loan", "renew a loan by 14 days", (Param("loan_id", "such as L12"),), kind="write"),
    Tool("transfer_to_human", "hand over", (Param("summary", "what they need"),), kind="end"),
))
POLICY = "Policy:\n1. Identify the member first.\n2. Confirm each renewal.\n3. Overdue loans cannot be renewed."
LEXICON = Lexicon(
    asks={"card": re.compile(r"\bcard\b"), "loan": re.compile(r"\bwhich (?:loan|book)\b|\bloan (?:id|number)\b")},
    verbs={"renew_loan": ("renew", "extend")},
    entities={"loan": (re.compile(r"\bL\d+\b"), lambda m: m)},
    vocabularies={},
    reasons={"overdue": ("overdue", "past due"), "identify": ("identify", "identified"), "confirm": ("confirm",)})


class LibraryDesk(Desk):
    def identify(self, card: str) -> str:
        if card not in self.db.members:
            raise ToolError(f"No member with card {card[:20]}.")
        self.identity = card
        return f"Member {card} identified."

    def _loan(self, loan_id: str) -> Loan:
        me = self.require_identity()
        loan = self.db.loans.get(loan_id.strip().upper())
        if loan is None:
            raise ToolError(f"No loan {loan_id[:20]}.")
        if loan.card != me:
            raise PrivacyError(f"Loan {loan.loan_id} is another member's.")
        return loan

    def get_loan(self, loan_id: str) -> str:
        loan = self._loan(loan_id)
        self.saw(f"loan:{loan.loan_id}")
        return as_json(loan)

    def check_renew_loan(self, loan_id: str):
        loan = self._loan(loan_id)
        return {"loan_id": loan.loan_id}, ("overdue loans cannot be renewed" if loan.overdue else None)

    def apply_renew_loan(self, loan_id: str) -> str:
        loan = self.db.loans[loan_id]
        loan.due, loan.renewed = loan.due + 14, True
        return f"Loan {loan_id} renewed; due in {loan.due} days."


def renewal(loan: Loan, forbidden: bool = False) -> Request:
    change = Change("renew_loan", {"loan_id": loan.loan_id},
                    (Mention("loan", (loan.loan_id, loan.title), f"It's loan {loan.loan_id}."),),
                    {"loan": frozenset({loan.loan_id})}, f"renew {loan.title} ({loan.loan_id})")
    return Request("renew", ("I'd like to renew a book.",), (Slot("loan", loan.loan_id, f"It's loan {loan.loan_id}."),),
                   (change,), (Output("due", "amount", loan.due + 14, f"loan:{loan.loan_id}", "When is it due now?"),)
                   if not forbidden else (), forbidden="overdue loans cannot be renewed" if forbidden else None,
                   elicit=("loan",) if forbidden else (), reads=(f"loan:{loan.loan_id}",) if forbidden else (),
                   reasons=("overdue",) if forbidden else ())


class LibraryEnv(ServiceEnv):
    name = "library"
    speaker = "Member"
    tools, lexicon, policy = TOOLS, LEXICON, POLICY
    instruction = instruction("You run a library desk.", TOOLS, POLICY)

    def make_task(self, task_id: int, seed: int, wording: str) -> Task:
        rng = random.Random(f"library:{seed}:{task_id}")
        db = Database(members=Table(Member, "card"), loans=Table(Loan, "loan_id"))
        loans = [Loan(f"L{n}", "C1" if n < 3 else "C2", f"Book {n}", rng.randint(1, 9), overdue=n == 2) for n in range(5)]
        db.members.add(Member("C1", "Ada", ["L0", "L1", "L2"]))
        db.members.add(Member("C2", "Bo", ["L3", "L4"]))
        for loan in loans:
            db.loans.add(loan)
        requests = [renewal(loans[0])] + ([renewal(loans[2], forbidden=True)] if task_id % 2 else [])
        goal_db = db.copy()
        LibraryDesk(goal_db).apply("renew_loan", {"loan_id": "L0"})
        goal = Goal("Ada", (Slot("card", "C1", "My card is C1."),), tuple(requests), wording=wording)
        return Task(task_id, "renew", db, goal_db, goal)

    def desk(self, task: Task, db: Database) -> LibraryDesk:
        return LibraryDesk(db)
