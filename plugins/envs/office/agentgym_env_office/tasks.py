"""Task *k* of the office: a team with calendars, past meetings with notes, mail, and 1-3 requests of
one colleague (the user), built in order on the office as the earlier ones leave it, so the goal is
the office with every wanted change applied in order.

Every task hinges on the written policy: at least one request needs a rule beyond doing the work (an
owner out of office, a weekend deadline, the lunch break, or a request the policy forbids:
:mod:`.requests`), so an agent that skips the policy makes a forbidden write or fails; and every
task has an allowed request that needs a change, so refusing everything fails too. A forbidden request
never hinges alone (:func:`plan`): refusing it by a lucky guess still leaves a write only the policy gets right.
"""
from __future__ import annotations

import datetime as dt
import random

from agentgym_service.db import Database
from agentgym_service.env import Task, goal_database
from agentgym_service.goal import Goal, Slot
from agentgym_service.wording import Words

from .domain import OfficeDesk, clock
from .records import Event, Meeting, Person, new_database
from .mentions import iso, weekdays
from .requests import BUILDERS, Ctx
from .wording import WORDS

FIRST = ("Ana", "Ben", "Carla", "Dev", "Elif", "Femi", "Gus", "Hana", "Ines", "Jun", "Kira", "Luca", "Maya", "Nils",
         "Omar", "Pia", "Rosa", "Sami", "Tara", "Viktor")
LAST = ("Lee", "Okafor", "Rossi", "Sato", "Novak", "Mensah", "Silva", "Brandt", "Haddad", "Kowalski", "Moreau", "Ito")
ROLES = ("engineer", "designer", "product manager", "analyst", "marketing lead", "sales lead", "recruiter")
MEETINGS = ("Weekly sync", "Budget review", "Launch planning", "Design critique", "Hiring debrief",
            "Customer escalation", "Quarterly planning", "Sprint retro")
EVENTS = ("Team standup", "Client call", "Design review", "Roadmap check-in", "Vendor demo", "Lunch and learn",
          "Budget sync", "Interview loop", "Partner update", "Ops review")
INTENTS = ("action_items", "schedule", "reschedule", "event_time", "forbidden")
WRITES = ("action_items", "schedule", "reschedule")
QUESTIONS = ("event_time", "forbidden")
#: Per request kind, its hinges (:mod:`.requests`) that the policy allows and those it forbids; a forbidden one is
#: drawn only beside an allowed write, so that every task has a change to make.
ALLOWED_HINGES = {"action_items": ("away", "away", "weekend"), "schedule": ("lunch", "lunch"), "reschedule": ("lunch",)}
FORBIDDEN_HINGES = {"schedule": ("away", "full"), "reschedule": ("clash", "clash")}
#: The chance that a write besides the task's hinge hinges too (on a rule the policy allows).
EXTRA_HINGE = 0.3
#: The chance that the hinge is the task's first write (else any write): a policy-blind agent meets it early.
FIRST_HINGE = 0.8
#: The chance that an ``event_time`` task asks when the user could meet colleagues (rule 4's slot) instead.
SLOT_QUESTION = 0.7


def plan(rng: random.Random, intent: str) -> list[tuple[str, str | None]]:
    """The task's requests as ``(kind, hinge)``: *intent* first, then 0-2 writes; one of them hinges on the policy
    (a ``forbidden`` intent is that one), and an ``event_time`` question mostly does too. A task whose only hinge is
    a forbidden request gets a write whose right form an allowed rule decides as well (owner away, weekend, lunch):
    refusing the forbidden one by a lucky guess and doing the rest without the policy still loses."""
    kinds = [intent, rng.choice(WRITES)] if intent in QUESTIONS else [intent]
    if intent in QUESTIONS and rng.random() < 0.3 or intent not in QUESTIONS and rng.random() < 0.5:
        kinds.append(rng.choice(WRITES))
    hinges: list[str | None] = [None] * len(kinds)
    writes = [i for i, kind in enumerate(kinds) if kind in WRITES]
    if intent == "event_time" and rng.random() < SLOT_QUESTION:
        hinges[0] = "slot"
    if intent != "forbidden":
        pick = writes[0] if rng.random() < FIRST_HINGE else rng.choice(writes)
        beside = len(writes) > 1
        hinges[pick] = rng.choice(ALLOWED_HINGES[kinds[pick]] + (FORBIDDEN_HINGES.get(kinds[pick], ()) if beside else ()))
    for i in writes:
        if hinges[i] is None and kinds[i] in ALLOWED_HINGES and rng.random() < EXTRA_HINGE:
            hinges[i] = rng.choice(ALLOWED_HINGES[kinds[i]])
    if not any(h in ALLOWED_HINGES.get(k, ()) for k, h in zip(kinds, hinges)):
        # only a forbidden request hinges: a write the policy decides too, so that a lucky guessed refusal loses
        free = [i for i in writes if hinges[i] is None]
        i = free[0] if rng.random() < FIRST_HINGE else rng.choice(free)
        hinges[i] = rng.choice(ALLOWED_HINGES[kinds[i]])
    return list(zip(kinds, hinges))


# -- the office and the task -----------------------------------------------------------------------
def office(rng: random.Random) -> tuple[Database, dt.date]:
    db = new_database()
    today = dt.date(2024, 5, 6) + dt.timedelta(days=rng.randrange(0, 120))
    while today.weekday() > 4:
        today += dt.timedelta(days=1)
    firsts = rng.sample(FIRST, 7)
    for n, first in enumerate(firsts, 1):
        last = rng.choice(LAST)
        db.people.add(Person(f"p{n:02d}", f"{first} {last}", f"{first}.{last}@office.example".lower(), rng.choice(ROLES)))
    people = [p.person_id for p in db.people]
    future = weekdays(today, 10)
    for p in people:
        if rng.random() < 0.4:
            db.people[p].away.append(iso(rng.choice(future)))
    n = 100
    for day in future:
        for title in rng.sample(EVENTS, rng.randint(3, 6)):  # one event of each title a day
            group = rng.sample(people, rng.randint(2, 4))
            length = rng.choice((30, 60, 60, 90))
            start = rng.randrange(9 * 60, 17 * 60 - length + 1, 30)
            db.events.add(Event(f"E{n}", title, iso(day), clock(start), length, group[0], group[1:]))
            n += 1
    past = weekdays(today, 6, step=-1)
    for k in range(5):
        group = rng.sample(people, rng.randint(4, 6))
        db.meetings.add(Meeting(f"M{10 + k}", MEETINGS[k], iso(past[k]), group[0], group, []))
    return db, today


def make_task(task_id: int, seed: int, wording: str, intents: tuple[str, ...]) -> Task:
    rng = random.Random(f"office-task:{seed}:{task_id}")
    intent = intents[task_id % len(intents)]
    db, today = office(rng)
    user = rng.choice([p.person_id for p in db.people])
    for meeting in list(db.meetings)[:4]:  # the user attended four of the five meetings
        if user not in meeting.attendees:
            meeting.attendees.append(user)
    c = Ctx(rng, db, db.copy(), user, today, Words(WORDS, rng, wording), set(), set())
    requests = []
    for kind, hinge in plan(rng, intent):
        request = BUILDERS[kind](c, hinge)
        requests.append(request)
        for change in request.changes:  # the days this request's changes touch stay as they are
            c.days.update(change.args[k] for k in ("date", "due_date") if k in change.args)
            if change.tool == "move_meeting":
                c.days.add(c.goal.events[change.args["event_id"]].date)
        desk = OfficeDesk(c.goal)
        desk.identity = user
        goal_database(c.goal, desk, [request])  # later requests are built on the office as this one leaves it
    person = db.people[user]
    identity = (Slot("email", person.email, c.words("email", email=person.email)),)
    goal = Goal(person.name, identity, tuple(requests), {}, rng.choice(("polite", "terse", "chatty")), wording)
    return Task(task_id, intent, db, c.goal, goal, world=today)
