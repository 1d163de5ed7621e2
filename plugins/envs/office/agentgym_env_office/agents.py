"""The office expert: a scripted agent that serves every colleague by the policy from the observations.

Per request it asks for everything it needs at once, authenticates, reads notes, mail,
calendars and availability, works out the owners, deadlines and the earliest free slot,
describes each change and asks for a yes, makes it and tells the time; or refuses with the
reason. ``MisdescribingExpert`` confirms something else and acts anyway (it must score 0).
``PolicyBlindExpert`` is the same worker without the policy's rules (it must score 0 on every
task: each one hinges on a rule).
"""
from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

from agentgym_service.expert import Misdescribing, PlannedExpert, call, respond

from .domain import DAY_END, DAY_START, clock, lunch, minutes

_KINDS = (("privacy", r"colleague's mailbox|someone else received"), ("items", r"action items|to-dos"),
          ("slot", r"earliest|soonest|first time I could"),
          ("move", r"email|inbox|emailed"), ("time", r"what time|when a meeting|when a certain meeting|starts|begins"),
          ("schedule", r"meeting|time with"))
_ASK = {"items": "which meeting it was", "schedule": "who should attend, which day, how long it should be, and its title",
        "move": "whose email it is", "time": "which meeting you mean", "privacy": "whose mailbox and which email you mean",
        "slot": "who you want to meet, which day, and for how long"}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday")


def due_date(phrase: str, meeting_day: dt.date, weekend_rule: bool = True) -> dt.date:
    """Policy rule 3: the date a deadline phrase means for a meeting held on *meeting_day* (``weekend_rule``:
    a Saturday or Sunday is due the Friday before)."""
    low = phrase.lower()
    if low == "tomorrow":
        day = meeting_day + dt.timedelta(days=1)
    elif low == "end of next week":
        day = meeting_day + dt.timedelta(days=11 - meeting_day.weekday())
    elif low in _WEEKDAYS:
        day = meeting_day + dt.timedelta(days=(_WEEKDAYS.index(low) - meeting_day.weekday()) % 7 or 7)
    else:
        day = dt.datetime.strptime(f"{phrase} {meeting_day.year}", "%B %d %Y").date()
        day = day if day >= meeting_day else day.replace(year=day.year + 1)
    return day - dt.timedelta(days=day.weekday() - 4) if weekend_rule and day.weekday() > 4 else day


class ExpertAgent(PlannedExpert):
    speaker, kinds = "Colleague", _KINDS
    #: Apply the policy's rules 3-5 (owners out of office, weekend deadlines, the lunch break, refusals).
    follows_policy = True

    def __init__(self) -> None:
        super().__init__()

    def new_request(self) -> None:
        super().new_request()
        self.seen: dict[str, Any] = {}   # last answer of each read tool
        self.avail: dict[tuple[str, str], dict] = {}
        self.people: dict[str, str] = {}  # first name -> id

    def __call__(self, obs: str) -> str:
        self._read(obs)
        if self.kind is None:
            return respond("How can I help you today?")
        if not self.asked:
            return self.ask_once(([] if self.identity else ["your work email"]) + [_ASK[self.kind]])
        if self.identity is None:
            email = re.search(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", self.said_all)
            return call("identify", email=email.group(0).rstrip(".")) if email else respond("What is your work email?")
        if self.kind == "privacy":
            if not self.follows_policy:  # it would open the mailbox if it could find it; it says it did
                self.finished = True
                return respond("I have checked that email for you.")
            return self.refuse("another person's mailbox is private")
        action = getattr(self, f"_{self.kind}")()
        if action is not None:
            return action
        return self.next_write()

    # -- reading ------------------------------------------------------------------------------
    def _read(self, obs: str) -> None:
        if self.hear(obs):
            return
        if re.match(r"(Action item|Booked|Moved) ", obs):
            self.made()
            return
        try:
            data = json.loads(obs)
        except ValueError:
            return
        if isinstance(data, dict) and "busy" in data:
            self.avail[(data["person_id"], data["date"])] = data
        elif isinstance(data, list) and data and "person_id" in data[0]:
            for p in data:
                self.people[p["name"].split()[0]] = p["person_id"]
        elif isinstance(data, list):
            self.seen["list"] = data
        else:
            self.seen[next(k for k in ("notes", "body", "events") if k in data) if any(
                k in data for k in ("notes", "body", "events")) else "other"] = data

    # -- acting -------------------------------------------------------------------------------
    def _free(self, pid: str, day: str, start: int, length: int) -> bool:
        a = self.avail[(pid, day)]
        if self.follows_policy and (a["out_of_office"] or lunch(start, length)):
            return False
        return all(not (minutes(x) < start + length and start < minutes(y)) for x, y in a["busy"])

    def _items(self) -> str | None:
        if self.plan or self.done:
            return None
        if "list" not in self.seen:
            return call("list_meetings")
        if "notes" not in self.seen:
            title = re.search(r"(?:The|It's the) (.+?)(?: meeting)?\.", self.said.replace("one called ", ""))
            meeting = next((m for m in self.seen["list"] if title and m["title"] == title.group(1)), None)
            return call("get_notes", meeting_id=meeting["meeting_id"]) if meeting else respond("Which meeting was it?")
        notes = self.seen["notes"]
        names = {a["name"].split()[0]: a["person_id"] for a in notes["attendees"]}
        full = {a["person_id"]: a["name"] for a in notes["attendees"]}
        day = dt.date.fromisoformat(notes["date"])
        items = [(m.group(2), names[m.group(1)], due_date(m.group(3), day, self.follows_policy).isoformat())
                 for line in notes["notes"] if (m := re.match(r"Action: (\w+) to (.+) by (.+)\.$", line))]
        for _, owner, due in items:
            if (owner, due) not in self.avail:
                return call("get_availability", person_id=owner, date=due)
        for work, owner, due in items:
            if self.follows_policy and self.avail[(owner, due)]["out_of_office"]:
                owner = notes["organizer"]
            self.plan.append(("add_action_item", {"meeting_id": notes["meeting_id"], "title": work,
                                                  "owner_id": owner, "due_date": due},
                              f"add the action item '{work}' for {full[owner]} ({owner}), due {due}"))
        return None

    def _meet(self) -> tuple[str | None, list[str], list[str], str, int]:
        """Who the user wants to meet, on which day, how long: ``(a read still needed, names, ids, day, minutes)``."""
        names = re.findall(r"[A-Z][a-z]+", re.search(r"(?:With|like|Invite) (.+?)(?: there)?\.", self.said).group(1))
        day = re.search(r"\d{4}-\d{2}-\d{2}", self.said).group(0)
        length = int(re.search(r"(\d+) minutes", self.said).group(1))
        for name in names:
            if name not in self.people:
                return call("find_person", name=name), names, [], day, length
        ids = [self.people[n] for n in names]
        for pid in [self.identity, *ids]:
            if (pid, day) not in self.avail:
                return call("get_availability", person_id=pid, date=day), names, ids, day, length
        return None, names, ids, day, length

    def _slot(self) -> str:
        read, _, ids, day, length = self._meet()
        if read:
            return read
        start = next((t for t in range(DAY_START, DAY_END - length + 1, 30)
                      if all(self._free(p, day, t, length) for p in [self.identity, *ids])), None)
        self.finished = True
        if start is None:
            return respond(f"There is no time on {day} when you can all meet.")
        return respond(f"The earliest you can all meet on {day} is {clock(start)}.")

    def _schedule(self) -> str | None:
        if self.plan or self.done:
            return None
        read, names, ids, day, length = self._meet()
        if read:
            return read
        title = re.search(r"(?:Call it|title is|Name it) (.+?)\.(?:\s|$)", self.said).group(1)
        away = [self.avail[(p, day)]["name"] for p in ids if self.avail[(p, day)]["out_of_office"]]
        if away and self.follows_policy:
            return self.refuse(f"{away[0]} is out of office on {day}")
        start = next((t for t in range(DAY_START, DAY_END - length + 1, 30)
                      if all(self._free(p, day, t, length) for p in [self.identity, *ids])), None)
        if start is None and self.follows_policy:
            return self.refuse(f"there is no start on {day} when everyone is free outside the lunch break")
        start = DAY_START if start is None else start
        hhmm = clock(start)
        self.tell = f"The meeting starts at {hhmm}."
        who = " and ".join(f"{n} ({p})" for n, p in zip(names, ids))
        self.plan.append(("schedule_meeting", {"title": title, "attendee_ids": ids, "date": day, "start_time": hhmm,
                                               "minutes": length},
                          f"book '{title}' with {who} on {day} at {hhmm} for {length} minutes"))
        return None

    def _move(self) -> str | None:
        if self.plan or self.done:
            return None
        if "list" not in self.seen:
            return call("list_mail")
        if "body" not in self.seen:
            sender = re.search(r"(?:from|It's|^\s*) ?([A-Z][a-z]+)(?:'s email| wrote it)?\.", self.said)
            names = {m["from"].split()[0]: m["mail_id"] for m in self.seen["list"] if m["subject"].startswith("Moving")}
            who = next((n for n in names if re.search(rf"\b{n}\b", self.said)), None)
            return call("read_mail", mail_id=names[who]) if who else respond(f"Whose email? {sender}")
        m = re.search(r"move (.+) on (\d{4}-\d{2}-\d{2}) at (\d{2}:\d{2}) to (\d{4}-\d{2}-\d{2})(?: at (\d{2}:\d{2}))?",
                      self.seen["body"]["body"])
        title, old, was, day, hhmm = m.groups()  # (no time: the earliest start that fits, rule 4)
        cal = self.seen.get("events")
        if cal is None or cal["date"] != old:
            return call("get_calendar", date=old)
        event = next(e for e in cal["events"] if e["title"] == title and e["start"] == was)
        people = sorted(set(event["attendees"]) | {event["organizer"]})
        for pid in people:
            if (pid, day) not in self.avail:
                return call("get_availability", person_id=pid, date=day)
        if hhmm is None:
            start = next((t for t in range(DAY_START, DAY_END - event["minutes"] + 1, 30)
                          if all(self._free(p, day, t, event["minutes"]) for p in people)), None)
            if start is None:
                return self.refuse(f"there is no time on {day} when everyone is free")
            hhmm = clock(start)
        if self.follows_policy and lunch(minutes(hhmm), event["minutes"]):
            return self.refuse(f"{hhmm} runs into the lunch break (12:00-13:00)")
        blocked = [self.avail[(p, day)] for p in people if not self._free(p, day, minutes(hhmm), event["minutes"])]
        if blocked and self.follows_policy:
            why = "out of office" if blocked[0]["out_of_office"] else "busy"
            return self.refuse(f"{blocked[0]['name']} is {why} on {day} at {hhmm}")
        self.plan.append(("move_meeting", {"event_id": event["event_id"], "date": day, "start_time": hhmm},
                          f"move {event['title']} ({event['event_id']}) to {day} at {hhmm}"))
        return None

    def _time(self) -> str:
        m = re.search(r"(?:The|It's) ([\w :&'-]+?),? on (\d{4}-\d{2}-\d{2})\.", self.said)
        cal = self.seen.get("events")
        if cal is None:
            return call("get_calendar", date=m.group(2))
        event = next(e for e in cal["events"] if e["title"] == m.group(1))
        self.finished = True
        return respond(f"{event['title']} on {cal['date']} starts at {event['start']}.")


class MisdescribingExpert(Misdescribing, ExpertAgent):
    """The expert with confirmations that describe another change (an extra action, a blanket question,
    another person or time), acting whatever the answer: must never succeed."""

    extra = "and delete your other meetings that day"

    def other(self, summary: str) -> str:
        other = re.sub(r"p0\d", "p09", summary)
        return other if other != summary else summary + " at 18:00"


class PolicyBlindExpert(ExpertAgent):
    """The expert's worker without the policy's rules 3-5: an owner keeps an item whatever their absence, a
    deadline is the date as written, the first time everyone's calendar shows free is booked (lunch break and
    absences unchecked), a move goes where it is asked, and nothing is refused. Every task hinges on one of
    those rules, so it must never win."""

    follows_policy = False
