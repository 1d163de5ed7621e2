"""The office's records: people, calendar events, meetings with notes, mail, action items."""
from __future__ import annotations

from dataclasses import dataclass, field

from agentgym_service.db import Database, Table


@dataclass
class Person:
    person_id: str
    name: str
    email: str
    role: str
    #: Dates (YYYY-MM-DD) the person is out of office.
    away: list[str] = field(default_factory=list)


@dataclass
class Event:
    event_id: str
    title: str
    date: str
    start: str  # HH:MM
    minutes: int
    organizer: str
    attendees: list[str]


@dataclass
class Meeting:
    """A past meeting with its notes (read by its attendees only)."""

    meeting_id: str
    title: str
    date: str
    organizer: str
    attendees: list[str]
    notes: list[str]


@dataclass
class Mail:
    mail_id: str
    to: str
    sender: str
    subject: str
    body: str
    date: str


@dataclass
class ActionItem:
    item_id: str
    meeting_id: str
    title: str
    owner: str
    due: str


def new_database() -> Database:
    return Database(people=Table(Person, "person_id"), events=Table(Event, "event_id"),
                    meetings=Table(Meeting, "meeting_id"), mail=Table(Mail, "mail_id"),
                    items=Table(ActionItem, "item_id"))
