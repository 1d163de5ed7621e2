"""The office's tools, policy, the colleague's vocabulary, and the desk that runs the tools.

Times are ``HH:MM`` on the half hour, dates ``YYYY-MM-DD``; working hours are 09:00-17:00 on
weekdays, and nothing is booked or moved into the lunch break (12:00-13:00). Anyone's
availability (busy intervals, out of office) is public; a meeting's notes are for its attendees
and a mailbox for its owner only (reading them otherwise ends the episode with 0). A write the
policy forbids (an item for an owner out of office on its due date or due on a weekend, a
meeting in a conflict or the lunch break) ends the episode with 0.
"""
from __future__ import annotations

import datetime as dt
import re

from agentgym_service.db import Database, as_json
from agentgym_service.desk import Desk, PrivacyError, ToolError
from agentgym_service.goal import Lexicon
from agentgym_service.tools import Param, Tool, ToolSet

from .records import ActionItem, Event

DAY_START, DAY_END = 9 * 60, 17 * 60
LUNCH_START, LUNCH_END = 12 * 60, 13 * 60

DATE = Param("date", "YYYY-MM-DD")
TOOLS = ToolSet((
    Tool("respond", "talk to your colleague", (Param("message", "what to say"),), kind="respond"),
    Tool("identify", "authenticate your colleague by work email", (Param("email", "their work email"),), kind="auth"),
    Tool("find_person", "people whose name matches: id, name, role", (Param("name", "a first or last name"),)),
    Tool("get_availability", "a person's busy times and out-of-office on a date", (Param("person_id", "such as p03"), DATE)),
    Tool("get_calendar", "the user's own events on a date, with ids and attendees", (DATE,)),
    Tool("list_meetings", "the user's past meetings (id, title, date)"),
    Tool("get_notes", "the notes of a meeting the user attended", (Param("meeting_id", "such as M12"),)),
    Tool("list_mail", "the user's inbox (id, sender, subject, date)"),
    Tool("read_mail", "an email of the user's inbox", (Param("mail_id", "such as m7"),)),
    Tool("add_action_item", "record an action item of a meeting",
         (Param("meeting_id", "such as M12"), Param("title", "what is to be done, as in the notes"),
          Param("owner_id", "person id"), Param("due_date", "YYYY-MM-DD")), kind="write"),
    Tool("schedule_meeting", "book a meeting organized by the user",
         (Param("title", "its title"), Param("attendee_ids", "person ids of the others", "array"), DATE,
          Param("start_time", "HH:MM"), Param("minutes", "length", "integer")), kind="write"),
    Tool("move_meeting", "move an event of the user's calendar", (Param("event_id", "such as E104"), DATE,
                                                                  Param("start_time", "HH:MM")), kind="write"),
    Tool("transfer_to_human", "hand over to the office manager; ends the conversation",
         (Param("summary", "what they need"),), kind="end"),
))

POLICY = """\
Policy:
1. Authenticate your colleague with identify before anything else, and act only for them: never open another \
person's mailbox or the notes of a meeting they did not attend (that ends the conversation). The identity cannot change.
2. Before each change, describe it exactly (the action item's title, owner and due date; a meeting's title, attendees, \
date, start time and length; a move's event, new date and time) and ask them to confirm; make only the change they \
said yes to. One change per confirmation.
3. Action items are the notes' lines "Action: <name> to <task> by <deadline>", with the task as written. A weekday \
deadline is its next occurrence after the meeting's date, "tomorrow" the day after the meeting, "end of next week" the \
Friday of the week after the meeting's; a deadline that falls on a Saturday or Sunday is due the Friday before. If the \
owner is out of office on the due date, the item goes to the meeting's organizer. Lines marked Done, ideas and \
discussion are not action items.
4. Meetings are booked and moved only within working hours (09:00-17:00, weekdays), never into the lunch break \
(12:00-13:00), and when the user and every attendee are free (not busy with an event, not out of office). Book the \
earliest start on the hour or half hour that fits; if nothing fits that day, refuse.
5. Refuse what the policy forbids (or transfer_to_human), saying why: the rule that forbids it (someone is out of \
office, busy, only the lunch break is free, a mailbox is private). Tell them what they ask (times, dates)."""

_TIME = r"\b(?:[01]?\d|2[0-3]):[0-5]\d\b"
ASKS = {
    "email": re.compile(r"e-?mail|\bidentif|\bverify|\bauthenticat|who (?:am i|are you)"),
    "meeting": re.compile(r"\bwhich (?:meeting|one)\b|\bwhat meeting\b|\bmeeting(?:'s)? (?:title|name)\b|\bwhat was the "
                          r"meeting"),
    "attendees": re.compile(r"\bwho\b|\bwhich (?:colleagues|people|persons|attendees)|\battendees\b|\binvite\b|\bwith whom"),
    "day": re.compile(r"\bwhich (?:day|date)\b|\bwhat (?:day|date)\b|\bwhen\b|\bon which\b"),
    "duration": re.compile(r"\bhow long\b|\bduration\b|\bhow many minutes\b|\blength\b"),
    "title": re.compile(r"\btitle\b|\bwhat (?:should|do you want to|would you like to) (?:call|name)|\bwhat is it about\b"
                        r"|\btopic\b|\bsubject\b"),
    "sender": re.compile(r"\bwhose (?:email|message|mail)\b|\bwhich (?:email|message|mail)\b|\bwho (?:sent|wrote)\b|"
                         r"\bfrom whom\b|\bsender\b"),
    "event": re.compile(r"\bwhich (?:meeting|event)\b|\bwhat (?:meeting|event)\b|\bwhich one\b"),
    "person": re.compile(r"\bwhose\b|\bwhich (?:colleague|mailbox|inbox)\b|\bwho\b|\bwhat (?:email|message)\b"),
}
#: Why the policy forbids a request (what a refusal must say): rules 1 (a private mailbox, notes of a meeting not
#: attended) and 4 (out of office, busy, the lunch break, working hours).
REASONS = {
    "away": ("out of office", "out of the office", "not in the office", "not in office", "absent", "on leave",
             "is away", "are away", "be away"),
    "busy": ("busy", "not free", "conflict", "clash", "another meeting", "already booked", "has a meeting",
             "double booked", "double book"),
    "lunch": ("lunch",),
    "private": ("private", "privacy", "another person's", "someone else's", "other people's", "not your own", "not yours"),
    "not_attended": ("did not attend", "didn't attend", "not attend"),
    "hours": ("working hours", "outside hours", "weekend"),
}

LEXICON = Lexicon(
    asks=ASKS,
    verbs={"add_action_item": ("add", "log", "record", "create"), "schedule_meeting": ("schedule", "book", "set up"),
           "move_meeting": ("move", "reschedule")},
    exclusive={"add_action_item": ("action item",), "schedule_meeting": ("schedule", "book"),
               "move_meeting": ("move", "reschedule")},
    entities={"person": (re.compile(r"\bp\d{2}\b"), lambda m: m), "date": (re.compile(r"\b\d{4}-\d{2}-\d{2}\b"),
                                                                          lambda m: m),
              "time": (re.compile(_TIME), lambda m: m.zfill(5)), "event": (re.compile(r"\bE\d{3}\b"), lambda m: m),
              "meeting": (re.compile(r"\bM\d{2}\b"), lambda m: m)},
    vocabularies={},
    reasons=REASONS)


def minutes(hhmm: str) -> int:
    hours, mins = hhmm.split(":")
    return int(hours) * 60 + int(mins)


def clock(total: int) -> str:
    return f"{total // 60:02d}:{total % 60:02d}"


def title_key(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9 ]", " ", str(text).lower()).split())


def busy(db: Database, person_id: str, date: str, skip: str | None = None) -> list[tuple[int, int]]:
    return sorted((minutes(e.start), minutes(e.start) + e.minutes) for e in db.events
                  if e.date == date and e.event_id != skip and (person_id in e.attendees or person_id == e.organizer))


def lunch(start: int, length: int) -> bool:
    """Whether a meeting from *start* for *length* minutes runs into the lunch break."""
    return start < LUNCH_END and start + length > LUNCH_START


def conflict(db: Database, people: list[str], date: str, start: int, length: int, skip: str | None = None, *,
             lunch_break: bool = True) -> str | None:
    """Why *people* cannot meet then (None: they can). ``lunch_break=False`` leaves the lunch rule out: the task
    generator's view of what an agent that skips that rule would book."""
    if start < DAY_START or start + length > DAY_END or start % 30:
        return f"meetings start on the hour or half hour within working hours (09:00-17:00); {clock(start)} for " \
               f"{length} minutes is not"
    day = dt.date.fromisoformat(date)
    if day.weekday() > 4:
        return f"{date} is a {day:%A}: meetings are on weekdays"
    if lunch_break and lunch(start, length):
        return f"12:00-13:00 is the lunch break: {clock(start)} for {length} minutes runs into it"
    for pid in people:
        person = db.people[pid]
        if date in person.away:
            return f"{person.name} ({pid}) is out of office on {date}"
        if any(a < start + length and start < b for a, b in busy(db, pid, date, skip)):
            return f"{person.name} ({pid}) is busy on {date} at {clock(start)}"
    return None


def earliest(db: Database, people: list[str], date: str, length: int, *, lunch_break: bool = True) -> int | None:
    """Policy rule 4: the earliest start on the hour or half hour when *people* can meet (None: nothing fits)."""
    return next((t for t in range(DAY_START, DAY_END - length + 1, 30)
                 if conflict(db, people, date, t, length, lunch_break=lunch_break) is None), None)


class OfficeDesk(Desk):
    # -- authentication and reads ----------------------------------------------------------------
    def identify(self, email: str) -> str:
        return self.identify_by_email(self.db.people, email, "person_id")

    def find_person(self, name: str) -> str:
        words = [w for w in re.split(r"\W+", name.lower()) if w][:4]
        found = [p for p in self.db.people if words and all(w in p.name.lower().split() for w in words)]
        if not found:
            raise ToolError(f"No one named {name[:40]!r}.")
        # a colleague's email is not for the assistant to hand out: authentication takes the one the user states
        return as_json([{"person_id": p.person_id, "name": p.name, "role": p.role} for p in found])

    def _person(self, person_id: str) -> str:
        key = person_id.strip().lower()
        if key not in self.db.people:
            raise ToolError(f"No person {person_id[:20]}; find_person gives ids.")
        return key

    def _date(self, date: str) -> str:
        try:
            if re.fullmatch(r"\d{4}-\d{2}-\d{2}", date.strip()):
                return dt.date.fromisoformat(date.strip()).isoformat()
        except ValueError:
            pass
        raise ToolError(f"Dates are YYYY-MM-DD (a real date), got {date[:20]!r}.", invalid=True)

    def get_availability(self, person_id: str, date: str) -> str:
        pid, day = self._person(person_id), self._date(date)
        self.saw(f"avail:{pid}:{day}")
        person = self.db.people[pid]
        return as_json({"person_id": pid, "name": person.name, "date": day, "out_of_office": day in person.away,
                        "busy": [[clock(a), clock(b)] for a, b in busy(self.db, pid, day)]})

    def get_calendar(self, date: str) -> str:
        me, day = self.require_identity(), self._date(date)
        self.saw(f"calendar:{day}")
        events = [{"event_id": e.event_id, "title": e.title, "start": e.start, "minutes": e.minutes,
                   "organizer": e.organizer, "attendees": e.attendees}
                  for e in sorted(self.db.events, key=lambda e: e.start)
                  if e.date == day and (me in e.attendees or me == e.organizer)]
        return as_json({"date": day, "events": events})

    def list_meetings(self) -> str:
        me = self.require_identity()
        return as_json([{"meeting_id": m.meeting_id, "title": m.title, "date": m.date} for m in self.db.meetings
                        if me in m.attendees])

    def get_notes(self, meeting_id: str) -> str:
        meeting = self._meeting(meeting_id)
        self.saw(f"meeting:{meeting.meeting_id}")
        people = [{"person_id": p, "name": self.db.people[p].name} for p in meeting.attendees]
        return as_json({"meeting_id": meeting.meeting_id, "title": meeting.title, "date": meeting.date,
                        "organizer": meeting.organizer, "attendees": people, "notes": meeting.notes})

    def _meeting(self, meeting_id: str):
        me = self.require_identity()
        meeting = self.db.meetings.get(meeting_id.strip().upper())
        if meeting is None:
            raise ToolError(f"No meeting {meeting_id[:20]}; list_meetings shows the user's.")
        if me not in meeting.attendees:
            raise PrivacyError(f"{meeting.meeting_id}'s notes are for its attendees; the user was not one.")
        return meeting

    def list_mail(self) -> str:
        me = self.require_identity()
        return as_json([{"mail_id": m.mail_id, "from": self.db.people[m.sender].name, "subject": m.subject,
                         "date": m.date} for m in self.db.mail if m.to == me])

    def read_mail(self, mail_id: str) -> str:
        me = self.require_identity()
        mail = self.db.mail.get(mail_id.strip().lower())
        if mail is None:
            raise ToolError(f"No email {mail_id[:20]}; list_mail shows the user's.")
        if mail.to != me:
            raise PrivacyError(f"Email {mail.mail_id} is in someone else's mailbox.")
        self.saw(f"mail:{mail.mail_id}")
        return as_json({"mail_id": mail.mail_id, "from": self.db.people[mail.sender].name, "subject": mail.subject,
                        "date": mail.date, "body": mail.body})

    # -- checks and changes -------------------------------------------------------------------
    def _time(self, text: str) -> int:
        if not re.fullmatch(r"\d{1,2}:\d{2}", text.strip()):
            raise ToolError(f"Times are HH:MM, got {text[:20]!r}.", invalid=True)
        return minutes(text.strip())

    def check_add_action_item(self, meeting_id: str, title: str, owner_id: str, due_date: str):
        meeting, owner, due = self._meeting(meeting_id), self._person(owner_id), self._date(due_date)
        key = f"{meeting.meeting_id}:{title_key(title)}"
        if key in self.db.items:
            raise ToolError(f"That action item is already recorded for {meeting.meeting_id}.", invalid=True)
        rule, day = None, dt.date.fromisoformat(due)
        if day.weekday() > 4:
            rule = f"{due} is a {day:%A}: a deadline on a weekend is due the Friday before"
        elif due in self.db.people[owner].away:
            rule = f"{self.db.people[owner].name} is out of office on {due}: the item goes to the organizer"
        return {"meeting_id": meeting.meeting_id, "title": title_key(title), "owner_id": owner, "due_date": due}, rule

    def apply_add_action_item(self, meeting_id: str, title: str, owner_id: str, due_date: str) -> str:
        self.db.items.add(ActionItem(f"{meeting_id}:{title}", meeting_id, title, owner_id, due_date))
        return f"Action item '{title}' recorded for {owner_id}, due {due_date}."

    def check_schedule_meeting(self, title: str, attendee_ids: list[str], date: str, start_time: str, minutes: int):
        me = self.require_identity()
        people = sorted({self._person(p) for p in attendee_ids} - {me})
        day, start = self._date(date), self._time(start_time)
        if not people or minutes <= 0 or minutes > 480:
            raise ToolError("A meeting needs other attendees and a length in minutes (30, 60, ...).", invalid=True)
        args = {"title": title_key(title), "attendee_ids": people, "date": day, "start_time": clock(start),
                "minutes": minutes}
        return args, conflict(self.db, [me, *people], day, start, minutes)

    def apply_schedule_meeting(self, title: str, attendee_ids: list[str], date: str, start_time: str,
                               minutes: int) -> str:
        event_id = f"N{date.replace('-', '')}{start_time.replace(':', '')}"
        self.db.events.add(Event(event_id, title, date, start_time, minutes, self.require_identity(), list(attendee_ids)))
        return f"Booked {event_id} '{title}' on {date} at {start_time} for {minutes} minutes with {', '.join(attendee_ids)}."

    def check_move_meeting(self, event_id: str, date: str, start_time: str):
        me = self.require_identity()
        event = self.db.events.get(event_id.strip().upper())
        if event is None or (me not in event.attendees and me != event.organizer):
            raise ToolError(f"No event {event_id[:20]} in the user's calendar; get_calendar lists them.")
        day, start = self._date(date), self._time(start_time)
        people = sorted(set(event.attendees) | {event.organizer})
        args = {"event_id": event.event_id, "date": day, "start_time": clock(start)}
        return args, conflict(self.db, people, day, start, event.minutes, skip=event.event_id)

    def apply_move_meeting(self, event_id: str, date: str, start_time: str) -> str:
        event = self.db.events[event_id]
        event.date, event.start = date, start_time
        return f"Moved {event_id} '{event.title}' to {date} at {start_time}."
