"""Task *k* of the office: a team with calendars, past meetings with notes, mail, and 1-3 requests of
one colleague (the user), at least one needing a change. Each request is built on the office as
the earlier requests leave it, so the goal is the office with every wanted change applied in order.
"""
from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

from agentgym_service.db import Database
from agentgym_service.env import Task, goal_database
from agentgym_service.goal import Change, Goal, Mention, Output, Request, Slot
from agentgym_service.wording import Words

from .domain import OfficeDesk, busy, clock, conflict, earliest, minutes, title_key
from .records import Event, Mail, Meeting, Person, new_database
from .wording import WORDS

FIRST = ("Ana", "Ben", "Carla", "Dev", "Elif", "Femi", "Gus", "Hana", "Ines", "Jun", "Kira", "Luca", "Maya", "Nils",
         "Omar", "Pia", "Rosa", "Sami", "Tara", "Viktor")
LAST = ("Lee", "Okafor", "Rossi", "Sato", "Novak", "Mensah", "Silva", "Brandt", "Haddad", "Kowalski", "Moreau", "Ito")
ROLES = ("engineer", "designer", "product manager", "analyst", "marketing lead", "sales lead", "recruiter")
WORK = ("send the budget draft", "update the roadmap slides", "reserve the venue", "review the contract",
        "draft the newsletter", "collect feedback from sales", "fix the login bug", "prepare the demo",
        "order new laptops", "write the release notes", "call the supplier", "clean up the backlog")
MEETINGS = ("Weekly sync", "Budget review", "Launch planning", "Design critique", "Hiring debrief",
            "Customer escalation", "Quarterly planning", "Sprint retro")
EVENTS = ("Team standup", "Client call", "Design review", "Roadmap check-in", "Vendor demo", "Lunch and learn",
          "Budget sync", "Interview loop", "Partner update", "Ops review")
NEW_TITLES = ("Pricing chat", "Onboarding plan", "Launch dry run", "Metrics deep dive", "Offsite prep")
TOPICS = ("the offsite", "the reorg", "salaries", "the merger", "a complaint")
DISTRACTORS = ("Discussed the Q3 numbers.", "Idea: a team lunch next month.", "Done: {name} sent the invoices.",
               "Agreed to keep the current vendor.", "Open question: do we need a second designer?")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
INTENTS = ("action_items", "schedule", "reschedule", "event_time", "forbidden")
WRITES = ("action_items", "schedule", "reschedule")
QUESTIONS = ("event_time", "forbidden")


def iso(day: dt.date) -> str:
    return day.isoformat()


def spoken(day: dt.date) -> str:
    return f"{day:%B} {day.day}"


def weekdays(start: dt.date, n: int, step: int = 1) -> list[dt.date]:
    out, day = [], start
    while len(out) < n:
        day += dt.timedelta(days=step)
        if day.weekday() < 5:
            out.append(day)
    return out


def person_mention(db: Database, pid: str, label: str = "person") -> Mention:
    p = db.people[pid]
    return Mention(label, (pid, p.name, p.name.split()[0]), f"It's {p.name}.")


def date_mention(day: str, label: str = "date") -> Mention:
    d = dt.date.fromisoformat(day)
    return Mention(label, (day, spoken(d), f"{d.day} {d:%B}"), f"The date is {day}.")


def time_mention(hhmm: str) -> Mention:
    return Mention("time", (hhmm, hhmm.lstrip("0")), f"The time is {hhmm}.")


@dataclass
class Ctx:
    rng: random.Random
    db: Database      # the office as the task starts
    goal: Database    # the office with the earlier requests' changes applied
    user: str
    today: dt.date
    words: Words
    used: set

    def others(self) -> list[str]:
        return [p.person_id for p in self.db.people if p.person_id != self.user]

    def first(self, pid: str) -> str:
        return self.db.people[pid].name.split()[0]


# -- requests -----------------------------------------------------------------------------------
def _due(rng: random.Random, meeting_day: dt.date) -> tuple[str, dt.date]:
    kind = rng.choice(("weekday", "weekday", "tomorrow", "next week", "date"))
    if kind == "tomorrow" and meeting_day.weekday() < 4:
        return "tomorrow", meeting_day + dt.timedelta(days=1)
    if kind == "next week":
        return "end of next week", meeting_day + dt.timedelta(days=11 - meeting_day.weekday())
    if kind == "date":
        day = rng.choice(weekdays(meeting_day, 8)[2:])
        return spoken(day), day
    name = rng.choice(WEEKDAYS)
    ahead = (WEEKDAYS.index(name) - meeting_day.weekday()) % 7 or 7
    return name, meeting_day + dt.timedelta(days=ahead)


def action_items(c: Ctx) -> Request:
    meeting = c.rng.choice([m for m in c.db.meetings if c.user in m.attendees and m.meeting_id not in c.used])
    c.used.add(meeting.meeting_id)
    day = dt.date.fromisoformat(meeting.date)
    owners = c.rng.sample([p for p in meeting.attendees if p != meeting.organizer], k=min(3, len(meeting.attendees) - 1))
    owners = owners[:c.rng.randint(2, max(2, len(owners)))]
    lines, changes = [], []
    for n, owner in enumerate(owners):
        work = c.rng.choice([w for w in WORK if all(w not in line for line in lines)])
        phrase, due = _due(c.rng, day)
        while iso(due) in c.db.people[meeting.organizer].away:  # the organizer can always take an item
            phrase, due = _due(c.rng, day)
        lines.append(f"Action: {c.first(owner)} to {work} by {phrase}.")
        if n == 0 and c.rng.random() < 0.35 and iso(due) not in c.db.people[owner].away \
                and not busy(c.goal, owner, iso(due)):  # (a free day: earlier requests' bookings stay valid)
            c.db.people[owner].away.append(iso(due))  # out of office that day: the organizer takes it
            c.goal.people[owner].away.append(iso(due))
        target = meeting.organizer if iso(due) in c.db.people[owner].away else owner
        args = {"meeting_id": meeting.meeting_id, "title": title_key(work), "owner_id": target, "due_date": iso(due)}
        changes.append(Change("add_action_item", args,
                              (Mention("title", (work,), f"The item is '{work}'."),
                               person_mention(c.db, target, "owner"), date_mention(iso(due), "due")),
                              {"person": frozenset({target}), "date": frozenset({iso(due)}),
                               "meeting": frozenset({meeting.meeting_id}), "event": frozenset(), "time": frozenset()},
                              f"add the action item '{work}' for {c.db.people[target].name}, due {iso(due)}"))
    notes = lines + [d.format(name=c.first(c.rng.choice(meeting.attendees))) for d in c.rng.sample(DISTRACTORS, 2)]
    c.rng.shuffle(notes)
    meeting.notes[:] = notes
    c.goal.meetings[meeting.meeting_id].notes[:] = notes
    w = c.words
    return Request("action_items", w.all("open_items"), (Slot("meeting", meeting.title, w("meeting", title=meeting.title)),),
                   tuple(changes))


def _schedule_slots(c: Ctx, people: list[str], day: dt.date, length: int, title: str) -> tuple[Slot, ...]:
    w, names = c.words, " and ".join(c.first(p) for p in people)
    return (Slot("attendees", c.first(people[0]), w("attendees", names=names)),
            Slot("day", iso(day), w("day", weekday=f"{day:%A}", date=iso(day))),
            Slot("duration", f"{length} minutes", w("duration", minutes=length)),
            Slot("title", title, w("title", title=title)))


def schedule(c: Ctx, away: bool = False) -> Request:
    for _ in range(50):
        people = sorted(c.rng.sample(c.others(), c.rng.randint(1, 2)))
        day = c.rng.choice(weekdays(c.today, 8))
        length = c.rng.choice((30, 60))
        title = c.rng.choice([t for t in NEW_TITLES if t not in c.used])
        if away:
            who = people[-1]
            if iso(day) not in c.goal.people[who].away:
                c.db.people[who].away.append(iso(day))
                c.goal.people[who].away.append(iso(day))
            c.used.add(title)
            return Request("schedule", c.words.all("open_schedule"), _schedule_slots(c, people, day, length, title),
                           forbidden=f"{c.db.people[who].name} is out of office on {iso(day)}: no slot fits",
                           elicit=("attendees", "day"), reads=(f"avail:{who}:{iso(day)}",))
        start = earliest(c.goal, [c.user, *people], iso(day), length)
        if start is not None:
            break
    else:
        raise RuntimeError("office: no free slot found for a schedule request")
    c.used.add(title)
    hhmm = clock(start)
    args = {"title": title_key(title), "attendee_ids": people, "date": iso(day), "start_time": hhmm, "minutes": length}
    lengths = {30: (f"{length} minutes", "30 min", "half an hour", "half-hour"), 60: ("60 minutes", "60 min", "1 hour",
                                                                                     "one hour", "an hour")}[length]
    change = Change("schedule_meeting", args,
                    (Mention("title", (title,), f"Call it {title}."), *(person_mention(c.db, p) for p in people),
                     date_mention(iso(day)), time_mention(hhmm), Mention("length", lengths, f"It's {length} minutes.")),
                    {"person": frozenset(people + [c.user]), "date": frozenset({iso(day)}),
                     "time": frozenset({hhmm, clock(minutes(hhmm) + length)}), "event": frozenset(),
                     "meeting": frozenset()},
                    f"book {title} with {' and '.join(c.db.people[p].name for p in people)} on {iso(day)} at {hhmm} "
                    f"for {length} minutes")
    out = Output("start", "token", hhmm, f"avail:{people[0]}:{iso(day)}", c.words("q_booked"), "time")
    return Request("schedule", c.words.all("open_schedule"), _schedule_slots(c, people, day, length, title), (change,),
                   (out,))


def _my_events(c: Ctx) -> list[Event]:
    return [e for e in c.goal.events if e.event_id.startswith("E") and e.event_id not in c.used
            and (c.user in e.attendees or c.user == e.organizer) and len(set(e.attendees) | {e.organizer}) > 1]


def reschedule(c: Ctx, clash: bool = False) -> Request:
    event = c.rng.choice(_my_events(c))
    c.used.add(event.event_id)
    people = sorted(set(event.attendees) | {event.organizer})
    senders = [p for p in people if p != c.user and f"sender:{p}" not in c.used]
    if not senders:
        return reschedule(c, clash)
    sender = c.rng.choice(senders)
    c.used.add(f"sender:{sender}")
    for _ in range(100):
        day = iso(c.rng.choice([d for d in weekdays(c.today, 8) if iso(d) != event.date]))
        start = c.rng.randrange(9 * 60, 17 * 60 - event.minutes + 1, 30)
        why = conflict(c.goal, people, day, start, event.minutes, skip=event.event_id)
        if (why is not None and "working hours" not in why) if clash else why is None:
            break
    else:
        raise RuntimeError("office: no time found for a reschedule request")
    hhmm = clock(start)
    mail_id = f"m{len(c.db.mail) + 1}"
    body = (f"Hi {c.first(c.user)}, could we move {event.title} on {event.date} at {event.start} to {day} at {hhmm}? "
            f"Thanks, {c.first(sender)}")
    for db in (c.db, c.goal):
        db.mail.add(Mail(mail_id, c.user, sender, f"Moving {event.title}", body, iso(c.today)))
    w = c.words
    slot = Slot("sender", c.first(sender), w("sender", name=c.first(sender)))
    change = Change("move_meeting", {"event_id": event.event_id, "date": day, "start_time": hhmm},
                    (Mention("event", (event.event_id, event.title), f"It's {event.title}."), date_mention(day),
                     time_mention(hhmm)),
                    {"event": frozenset({event.event_id}), "date": frozenset({day, event.date}),
                     "time": frozenset({hhmm, event.start}), "person": frozenset(people), "meeting": frozenset()},
                    f"move {event.title} to {day} at {hhmm}")
    if clash:
        busy = next(p for p in people if conflict(c.goal, [p], day, start, event.minutes, skip=event.event_id))
        return Request("reschedule", w.all("open_move"), (slot,), (change,), forbidden=why, elicit=("sender",),
                       reads=(f"mail:{mail_id}", f"avail:{busy}:{day}"))
    return Request("reschedule", w.all("open_move"), (slot,), (change,))


def event_time(c: Ctx) -> Request:
    events = [e for e in _my_events(c) if sum(x.title == e.title and x.date == e.date for x in c.goal.events) == 1]
    event = c.rng.choice(events)
    c.used.add(event.event_id)
    w = c.words
    out = Output("start", "token", event.start, f"calendar:{event.date}", w("q_time"), "time")
    return Request("event_time", w.all("open_time"), (Slot("event", event.title, w("event", title=event.title,
                                                                                    date=event.date)),), outputs=(out,))


def privacy(c: Ctx) -> Request:
    owner, sender = c.rng.sample(c.others(), 2)
    topic = c.rng.choice(TOPICS)
    mail_id = f"m{len(c.db.mail) + 1}"
    for db in (c.db, c.goal):
        db.mail.add(Mail(mail_id, owner, sender, f"About {topic}", f"Some private words about {topic}.", iso(c.today)))
    slot = Slot("person", c.first(owner), c.words("person", owner=c.first(owner), sender=c.first(sender), topic=topic))
    return Request("privacy", c.words.all("open_privacy"), (slot,), forbidden="another person's mailbox is private",
                   elicit=("person",))


def forbidden(c: Ctx) -> Request:
    kind = c.rng.choice(("schedule_away", "move_conflict", "privacy"))
    if kind == "schedule_away":
        return schedule(c, away=True)
    return reschedule(c, clash=True) if kind == "move_conflict" else privacy(c)


BUILDERS = {"action_items": action_items, "schedule": schedule, "reschedule": reschedule, "event_time": event_time,
            "forbidden": forbidden}


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
    kinds = [intent, rng.choice(WRITES)] if intent in QUESTIONS else [intent]
    if intent in QUESTIONS and rng.random() < 0.3 or intent not in QUESTIONS and rng.random() < 0.5:
        kinds.append(rng.choice(WRITES))
    c = Ctx(rng, db, db.copy(), user, today, Words(WORDS, rng, wording), set())
    requests = []
    for kind in kinds:
        request = BUILDERS[kind](c)
        requests.append(request)
        desk = OfficeDesk(c.goal)
        desk.identity = user
        goal_database(c.goal, desk, [request])  # later requests are built on the office as this one leaves it
    person = db.people[user]
    identity = (Slot("email", person.email, c.words("email", email=person.email)),)
    goal = Goal(person.name, identity, tuple(requests), {}, rng.choice(("polite", "terse", "chatty")), wording)
    return Task(task_id, intent, db, c.goal, goal, world=today)
