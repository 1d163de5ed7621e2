"""The colleague's requests, each built on the office as the earlier requests leave it.

A builder takes the task's :class:`Ctx` and a *hinge*: the variant whose right handling needs a rule
of the written policy beyond doing the work (None: the plain request). Hinges that are allowed:
``away`` (an action item's owner is out of office on its due date: the organizer takes it),
``weekend`` (a deadline on a Saturday or Sunday: due the Friday before), ``lunch`` (the earliest
time everyone is free runs into the lunch break: the earliest start after it), ``slot`` (the
question when the user could meet colleagues, answered the same way). Hinges the policy
forbids: ``away`` for a meeting (an attendee out of office that day), ``full`` (the only time all
are free is the lunch break),
``clash`` (a move into a conflict or the lunch break), and another person's mailbox. An agent that
skips the rule makes a write the policy forbids (or reads what it may not), which ends the episode
with 0.
"""
from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

from agentgym_service.db import Database
from agentgym_service.goal import Change, Mention, Output, Request, Slot
from agentgym_service.wording import Words

from .domain import DAY_END, DAY_START, LUNCH_END, LUNCH_START, busy, clock, conflict, earliest, lunch, minutes, \
    title_key
from .mentions import date_mention, iso, person_mention, spoken, time_mention, weekdays
from .records import Event, Mail

WORK = ("send the budget draft", "update the roadmap slides", "reserve the venue", "review the contract",
        "draft the newsletter", "collect feedback from sales", "fix the login bug", "prepare the demo",
        "order new laptops", "write the release notes", "call the supplier", "clean up the backlog")
NEW_TITLES = ("Pricing chat", "Onboarding plan", "Launch dry run", "Metrics deep dive", "Offsite prep")
TOPICS = ("the offsite", "the reorg", "salaries", "the merger", "a complaint")
DISTRACTORS = ("Discussed the Q3 numbers.", "Idea: a team lunch next month.", "Done: {name} sent the invoices.",
               "Agreed to keep the current vendor.", "Open question: do we need a second designer?")
#: Events of one person alone that fill part of a day (a morning before a lunch hinge, half a day of a full one).
BLOCKS = ("Focus time", "Customer visit", "Training", "Workshop prep", "Interview prep")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")


@dataclass
class Ctx:
    rng: random.Random
    db: Database      # the office as the task starts
    goal: Database    # the office with the earlier requests' changes applied
    user: str
    today: dt.date
    words: Words
    used: set
    #: Days the earlier requests' changes touch: no event or absence is added on them (it would change those changes).
    days: set

    def others(self) -> list[str]:
        return [p.person_id for p in self.db.people if p.person_id != self.user]

    def first(self, pid: str) -> str:
        return self.db.people[pid].name.split()[0]

    def free(self, pid: str, day: str, start: int = DAY_START, end: int = DAY_END) -> bool:
        """Whether *pid* is in the office and has no event from *start* to *end* on *day*."""
        return day not in self.goal.people[pid].away and all(b <= start or a >= end for a, b in busy(self.goal, pid, day))

    def away(self, pid: str, day: str) -> None:
        for db in (self.db, self.goal):
            if day not in db.people[pid].away:
                db.people[pid].away.append(day)
        self.days.add(day)

    def block(self, pid: str, day: str, start: int, end: int, title: str) -> None:
        """An event of *pid* alone from *start* to *end*, in the office as the task starts."""
        n = 1 + max(int(e.event_id[1:]) for e in self.db.events if e.event_id.startswith("E"))
        for db in (self.db, self.goal):
            db.events.add(Event(f"E{n}", title, day, clock(start), end - start, pid, []))
        self.days.add(day)


# -- action items -------------------------------------------------------------------------------
def _due(rng: random.Random, meeting_day: dt.date, weekend: bool = False) -> tuple[str, dt.date]:
    """A deadline phrase of the notes and the due date policy rule 3 gives it."""
    if weekend:  # a date on a Saturday or Sunday: due the Friday before
        day = rng.choice([d for d in (meeting_day + dt.timedelta(days=n) for n in range(2, 13)) if d.weekday() > 4])
        return spoken(day), day - dt.timedelta(days=day.weekday() - 4)
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


def action_items(c: Ctx, hinge: str | None = None) -> Request:
    """The action items of a meeting's notes; *hinge* ``away`` or ``weekend`` falls on one item of them."""
    meeting = c.rng.choice([m for m in c.db.meetings if c.user in m.attendees and m.meeting_id not in c.used])
    c.used.add(meeting.meeting_id)
    day = dt.date.fromisoformat(meeting.date)
    owners = c.rng.sample([p for p in meeting.attendees if p != meeting.organizer], k=min(3, len(meeting.attendees) - 1))
    owners = owners[:c.rng.randint(2, max(2, len(owners)))]
    pick = c.rng.randrange(len(owners))  # the item the hinge falls on
    lines, changes = [], []
    for n, owner in enumerate(owners):
        work = c.rng.choice([w for w in WORK if all(w not in line for line in lines)])
        away = hinge == "away" and n == pick
        for _ in range(60):
            phrase, due = _due(c.rng, day, weekend=hinge == "weekend" and n == pick)
            if iso(due) in c.db.people[meeting.organizer].away:  # the organizer can always take an item
                continue
            # the owner out of office that day: a free day, so that earlier requests' changes stay as they are
            if not away or iso(due) in c.db.people[owner].away or (c.free(owner, iso(due)) and iso(due) not in c.days):
                break
        else:
            raise RuntimeError("office: no deadline found for an action item")
        if away:
            c.away(owner, iso(due))
        lines.append(f"Action: {c.first(owner)} to {work} by {phrase}.")
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


# -- meetings -----------------------------------------------------------------------------------
def _schedule_slots(c: Ctx, people: list[str], day: dt.date, length: int, title: str) -> tuple[Slot, ...]:
    w, names = c.words, " and ".join(c.first(p) for p in people)
    return (Slot("attendees", c.first(people[0]), w("attendees", names=names)),
            Slot("day", iso(day), w("day", weekday=f"{day:%A}", date=iso(day))),
            Slot("duration", f"{length} minutes", w("duration", minutes=length)),
            Slot("title", title, w("title", title=title)))


def _lunch_first(c: Ctx, everyone: list[str], day: str, length: int) -> bool:
    """Make the earliest start when *everyone* is free run into the lunch break (a morning event of one of them
    where needed), with a start after lunch left: the policy's slot is not the first free one. False: no such day."""
    into = LUNCH_START - length + 30  # the first start that runs into the lunch break
    blind = earliest(c.goal, everyone, day, length, lunch_break=False)
    if blind is None or blind >= LUNCH_END:
        return False
    starts = range(max(blind, into), DAY_END - length + 1, 30)  # (a morning event until *into* leaves these free)
    first = next((t for t in starts if conflict(c.goal, everyone, day, t, length, lunch_break=False) is None), None)
    if first is None or not lunch(first, length) or not any(
            conflict(c.goal, everyone, day, t, length) is None for t in starts):
        return False
    if blind < into:
        holders = [p for p in everyone if c.free(p, day, blind, into)]
        if not holders:
            return False
        c.block(c.rng.choice(holders), day, blind, into, c.rng.choice(BLOCKS))
    return True


def _fill(c: Ctx, everyone: list[str], day: str, length: int) -> bool:
    """Events that leave *everyone* free together on *day* only in the lunch break (one of them busy until lunch,
    one from lunch on): no start fits, though the calendars show a gap. False: nobody free for them."""
    if not all(c.free(p, day, LUNCH_START, LUNCH_START + length) for p in everyone):
        return False
    morning = [p for p in everyone if c.free(p, day, DAY_START, LUNCH_START)]
    afternoon = [p for p in everyone if c.free(p, day, LUNCH_END, DAY_END)]
    if not morning or not afternoon:
        return False
    first, second = c.rng.sample(BLOCKS, 2)
    c.block(c.rng.choice(morning), day, DAY_START, LUNCH_START, first)
    c.block(c.rng.choice(afternoon), day, LUNCH_END, DAY_END, second)
    return True


def _booking(c: Ctx, people: list[str], day: dt.date, length: int, title: str, hhmm: str | None) -> Change:
    """The booking the colleague asks for (*hhmm* None: a forbidden one, whose time nobody chose)."""
    lengths = {30: (f"{length} minutes", "30 min", "half an hour", "half-hour"),
               60: ("60 minutes", "60 min", "1 hour", "one hour", "an hour")}[length]
    mentions = (Mention("title", (title,), f"Call it {title}."), *(person_mention(c.db, p) for p in people),
                date_mention(iso(day)), Mention("length", lengths, f"It's {length} minutes."))
    times = frozenset({hhmm, clock(minutes(hhmm) + length)}) if hhmm else frozenset()
    args = {"title": title_key(title), "attendee_ids": people, "date": iso(day), "start_time": hhmm or "",
            "minutes": length}
    who = " and ".join(c.db.people[p].name for p in people)
    return Change("schedule_meeting", args, mentions + ((time_mention(hhmm),) if hhmm else ()),
                  {"person": frozenset(people + [c.user]), "date": frozenset({iso(day)}), "time": times,
                   "event": frozenset(), "meeting": frozenset()},
                  f"book {title} with {who} on {iso(day)}" + (f" at {hhmm}" if hhmm else "") + f" for {length} minutes")


def schedule(c: Ctx, hinge: str | None = None) -> Request:
    """A meeting with 1-2 colleagues; *hinge* ``lunch`` (allowed), ``away`` or ``full`` (forbidden)."""
    for _ in range(400):
        people = sorted(c.rng.sample(c.others(), c.rng.randint(1, 2)))
        day = c.rng.choice(weekdays(c.today, 8))
        length = c.rng.choice((30, 60))
        everyone = [c.user, *people]
        if hinge and (iso(day) in c.days or any(iso(day) in c.goal.people[p].away for p in everyone)):
            continue  # a hinge changes the day: not one earlier requests use, nobody away yet
        if hinge == "away" and earliest(c.goal, everyone, iso(day), length) is not None:
            who = c.rng.choice(people)
            c.away(who, iso(day))
            why = f"{c.db.people[who].name} is out of office on {iso(day)}: no slot fits"
            return _forbidden_booking(c, people, day, length, why, ("away",), reads=(f"avail:{who}:{iso(day)}",))
        if hinge == "full" and _fill(c, everyone, iso(day), length):
            why = f"{', '.join(c.db.people[p].name for p in everyone)} are all free on {iso(day)} only in the lunch " \
                  "break: no slot fits"
            return _forbidden_booking(c, people, day, length, why, ("lunch",),
                                      reads=tuple(f"avail:{p}:{iso(day)}" for p in everyone))
        if hinge in ("away", "full") or hinge == "lunch" and not _lunch_first(c, everyone, iso(day), length):
            continue
        start = earliest(c.goal, everyone, iso(day), length)
        if start is not None:
            break
    else:
        raise RuntimeError(f"office: no day found for a schedule request ({hinge or 'plain'})")
    title = c.rng.choice([t for t in NEW_TITLES if t not in c.used])
    c.used.add(title)
    hhmm = clock(start)
    out = Output("start", "token", hhmm, f"avail:{people[0]}:{iso(day)}", c.words("q_booked"), "time")
    return Request("schedule", c.words.all("open_schedule"), _schedule_slots(c, people, day, length, title),
                   (_booking(c, people, day, length, title, hhmm),), (out,))


def _forbidden_booking(c: Ctx, people: list[str], day: dt.date, length: int, why: str, reasons: tuple[str, ...],
                       reads: tuple) -> Request:
    """A booking the policy forbids for *reasons* (:data:`.domain.REASONS`): the colleague asks for it as for any
    other (and says yes to it, described)."""
    title = c.rng.choice([t for t in NEW_TITLES if t not in c.used])
    c.used.add(title)
    return Request("schedule", c.words.all("open_schedule"), _schedule_slots(c, people, day, length, title),
                   (_booking(c, people, day, length, title, None),), forbidden=why, elicit=("attendees", "day"),
                   reads=reads, reasons=reasons)


def _my_events(c: Ctx) -> list[Event]:
    return [e for e in c.goal.events if e.event_id.startswith("E") and e.event_id not in c.used
            and (c.user in e.attendees or c.user == e.organizer) and len(set(e.attendees) | {e.organizer}) > 1]


def _target(c: Ctx, event: Event, people: list[str], hinge: str | None) -> tuple[str, int, str | None] | None:
    """Where an email asks to move *event*: ``(day, start, why the policy forbids it or None)``; None: nowhere fits
    the *hinge*."""
    for _ in range(40 if hinge == "lunch" else 100):
        day = iso(c.rng.choice([d for d in weekdays(c.today, 8) if iso(d) != event.date]))
        if hinge == "lunch":
            if day not in c.days and not any(day in c.goal.people[p].away for p in people) \
                    and _lunch_first(c, people, day, event.minutes):
                return day, earliest(c.goal, people, day, event.minutes), None
            continue
        start = c.rng.randrange(9 * 60, 17 * 60 - event.minutes + 1, 30)
        why = conflict(c.goal, people, day, start, event.minutes, skip=event.event_id)
        if (why is not None and "working hours" not in why) if hinge == "clash" else why is None:
            return day, start, why
    return None


def reschedule(c: Ctx, hinge: str | None = None) -> Request:
    """An email asking to move one of the user's meetings; *hinge* ``lunch``: to a day, at the earliest time that works
    (the first free one runs into the lunch break); ``clash``: into a conflict or the lunch break."""
    events = _my_events(c)
    c.rng.shuffle(events)
    for event in events:
        people = sorted(set(event.attendees) | {event.organizer})
        senders = [p for p in people if p != c.user and f"sender:{p}" not in c.used]
        target = _target(c, event, people, hinge) if senders else None
        if target is not None:
            break
    else:
        raise RuntimeError(f"office: no meeting to move found for a reschedule request ({hinge or 'plain'})")
    day, start, why = target
    sender = c.rng.choice(senders)
    c.used.update({event.event_id, f"sender:{sender}"})
    hhmm = clock(start)
    mail_id = f"m{len(c.db.mail) + 1}"
    when = f"{day}, at the earliest time that works for everyone" if hinge == "lunch" else f"{day} at {hhmm}"
    body = f"Hi {c.first(c.user)}, could we move {event.title} on {event.date} at {event.start} to {when}? " \
           f"Thanks, {c.first(sender)}"
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
    if hinge == "clash":
        busy_one = [p for p in people if conflict(c.goal, [p], day, start, event.minutes, skip=event.event_id,
                                                  lunch_break=False)]
        reads = (f"mail:{mail_id}",) + ((f"avail:{busy_one[0]}:{day}",) if busy_one else ())  # the lunch break: the mail
        return Request("reschedule", w.all("open_move"), (slot,), (change,), forbidden=why, elicit=("sender",),
                       reads=reads, reasons=_clash_reasons(c, people, day, start, event))
    return Request("reschedule", w.all("open_move"), (slot,), (change,))


def _clash_reasons(c: Ctx, people: list[str], day: str, start: int, event: Event) -> tuple[str, ...]:
    """Every reason why *people* cannot meet on *day* at *start* for *event*'s length (:data:`.domain.REASONS`)."""
    reasons = ["lunch"] if lunch(start, event.minutes) else []
    for pid in people:
        if day in c.goal.people[pid].away:
            reasons.append("away")
        if any(a < start + event.minutes and start < b for a, b in busy(c.goal, pid, day, event.event_id)):
            reasons.append("busy")
    return tuple(dict.fromkeys(reasons))


# -- questions and the mailbox ------------------------------------------------------------------
def event_time(c: Ctx, hinge: str | None = None) -> Request:
    """When one of the user's meetings starts; *hinge* ``slot``: when the user could meet colleagues instead."""
    if hinge == "slot":
        return free_time(c)
    events = [e for e in _my_events(c) if sum(x.title == e.title and x.date == e.date for x in c.goal.events) == 1]
    event = c.rng.choice(events)
    c.used.add(event.event_id)
    w = c.words
    out = Output("start", "token", event.start, f"calendar:{event.date}", w("q_time"), "time")
    return Request("event_time", w.all("open_time"), (Slot("event", event.title, w("event", title=event.title,
                                                                                    date=event.date)),), outputs=(out,))


def free_time(c: Ctx) -> Request:
    """The earliest start when the user and 1-2 colleagues could meet on a day (nothing booked): the first time
    their calendars show free runs into the lunch break, so the policy's answer is a later one."""
    for _ in range(400):
        people = sorted(c.rng.sample(c.others(), c.rng.randint(1, 2)))
        day, length = iso(c.rng.choice(weekdays(c.today, 8))), c.rng.choice((30, 60))
        everyone = [c.user, *people]
        if day not in c.days and not any(day in c.goal.people[p].away for p in everyone) \
                and _lunch_first(c, everyone, day, length):
            break
    else:
        raise RuntimeError("office: no day found for a free-time question")
    c.days.add(day)  # later requests leave the day as it is: the answer stays
    w, names = c.words, " and ".join(c.first(p) for p in people)
    slots = (Slot("attendees", c.first(people[0]), w("attendees", names=names)),
             Slot("day", day, w("day", weekday=f"{dt.date.fromisoformat(day):%A}", date=day)),
             Slot("duration", f"{length} minutes", w("duration", minutes=length)))
    out = Output("start", "token", clock(earliest(c.goal, everyone, day, length)), f"avail:{people[0]}:{day}",
                 w("q_slot"), "time")
    return Request("free_time", w.all("open_slot"), slots, outputs=(out,))


def privacy(c: Ctx) -> Request:
    owner, sender = c.rng.sample(c.others(), 2)
    topic = c.rng.choice(TOPICS)
    mail_id = f"m{len(c.db.mail) + 1}"
    for db in (c.db, c.goal):
        db.mail.add(Mail(mail_id, owner, sender, f"About {topic}", f"Some private words about {topic}.", iso(c.today)))
    slot = Slot("person", c.first(owner), c.words("person", owner=c.first(owner), sender=c.first(sender), topic=topic))
    return Request("privacy", c.words.all("open_privacy"), (slot,), forbidden="another person's mailbox is private",
                   elicit=("person",), reasons=("private",))


def forbidden(c: Ctx, hinge: str | None = None) -> Request:
    """A request the policy forbids: a meeting with someone out of office or with no start that fits, a move into
    a conflict, another person's mailbox."""
    kind = c.rng.choice(("schedule_away", "schedule_full", "move_conflict", "privacy"))
    if kind == "privacy":
        return privacy(c)
    if kind == "move_conflict":
        return reschedule(c, "clash")
    return schedule(c, kind.split("_")[1])


BUILDERS = {"action_items": action_items, "schedule": schedule, "reschedule": reschedule, "event_time": event_time,
            "forbidden": forbidden}
