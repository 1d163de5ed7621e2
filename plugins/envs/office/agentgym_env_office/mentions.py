"""Dates as the office's requests name them, and the mentions the simulated colleague gives when asked."""
from __future__ import annotations

import datetime as dt

from agentgym_service.db import Database
from agentgym_service.goal import Mention


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
