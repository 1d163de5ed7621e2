"""The planning expert: a scripted agent that serves every manager by the policy from the observations.

Per request it asks for what it needs at once, authenticates, reads the project, requirement,
updates and people, works out the tasks, the allocation by rule 4, the slip's cascade or the
leave's reassignments, describes each change and asks for a yes, makes it and tells the end
week; or refuses with the reason. ``MisdescribingExpert`` confirms something else, ``PolicyBlindExpert`` does
the work without the policy's checks (both must score 0).
"""
from __future__ import annotations

import json
import re

from agentgym_service.expert import Misdescribing, PlannedExpert, call, respond

_KINDS = (("person", r"specific person|someone in particular"), ("breakdown", r"requirement"),
          ("reassign", r"leave|away|rebalance"), ("allocate", r"unassigned|allocate|open tasks|no owner|staff"),
          ("replan", r"slip|delay|behind|re-plan"), ("end", r"end|finish"))
_ASK = {"breakdown": "the project id and the requirement id", "person": "the project id, which task, and who should "
        "take it"}


class ExpertAgent(PlannedExpert):
    speaker, kinds = "Manager", _KINDS

    def __init__(self) -> None:
        self.handled: set[str] = set()  # progress updates already acted on
        super().__init__()

    def new_request(self) -> None:
        super().new_request()
        self.project: dict | None = None
        self.requirement: dict | None = None
        self.updates: list | None = None
        self.update: re.Match | None = None
        self.people: dict[str, list] = {}  # skill -> people
        self.planned = False
        self.created: dict[str, str] = {}  # item title -> task id

    def __call__(self, obs: str) -> str:
        self._read(obs)
        if self.kind is None:
            return respond("How can I help you today?")
        if not self.asked:
            wants = [] if self.identity else ["your work email"]
            return self.ask_once(wants + [_ASK.get(self.kind, "the project id")])
        if self.identity is None:
            email = re.search(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", self.said_all)
            return call("identify", email=email.group(0).rstrip(".")) if email else respond("What is your work email?")
        pid = re.findall(r"\bP\d\b", self.said)[-1]
        if self.project is None:
            return call("get_project", project_id=pid)
        if not self.planned:
            action = getattr(self, f"_{self.kind}")()
            if action is not None:
                return action
            self.planned = True
        return self.next_write()

    # -- reading ------------------------------------------------------------------------------
    def _read(self, obs: str) -> None:
        if self.hear(obs):
            return
        if m := re.match(r"Created (T\d+) '(.+)' in", obs):
            self.created[m.group(2).lower()] = m.group(1)
        if re.match(r"(Created|Assigned|T\d+ now runs)", obs):
            self.made()
            return
        try:
            data = json.loads(obs)
        except ValueError:
            return
        if isinstance(data, dict) and "tasks" in data:
            self.project = data
        elif isinstance(data, dict) and "items" in data:
            self.requirement = data
        elif isinstance(data, list) and (not data or "text" in data[0]):
            self.updates = data
        elif isinstance(data, list):
            skill = re.search(r'find_people\(skill="(\w+)"\)', self._last or "")
            if skill:
                self.people[skill.group(1)] = data

    _last: str | None = None

    # -- acting -------------------------------------------------------------------------------
    def prepare(self, tool: str, args: dict, summary: str) -> tuple[dict, str]:
        if tool == "create_task":  # dependencies: the ids the earlier creates got
            args = dict(args, depends_on=[self.created[t.lower()] for t in args["depends_on"]])
            deps = f", after {', '.join(args['depends_on'])}" if args["depends_on"] else ""
            summary = summary.replace("{deps}", deps)
        return args, summary

    def next_write(self) -> str:
        return self._say(super().next_write())

    def _say(self, action: str) -> str:
        self._last = action
        return action

    def _tasks(self) -> dict[str, dict]:
        return {t["task_id"]: t for t in self.project["tasks"]}

    def _find(self, skill: str) -> str | None:
        return None if skill in self.people else self._say(call("find_people", skill=skill))

    def _allocate_tasks(self, tasks: list[dict], exclude: str | None = None) -> str | None:
        """Rule 4 for *tasks* in id order (or the next find_people call); plans the assignments."""
        for t in tasks:
            ask = self._find(t["skill"])
            if ask:
                return ask
        held: dict[str, int] = {}
        for people in self.people.values():
            for p in people:
                held[p["person_id"]] = p["tasks_held"]
        for t in tasks:
            if t["assignee"]:
                held[t["assignee"]] -= 1
            fits = [p for p in self.people[t["skill"]] if p["person_id"] != exclude and not self._on_leave(p, t)
                    and held[p["person_id"]] < p["capacity"]]
            best = min(fits, key=lambda p: (-(p["capacity"] - held[p["person_id"]]), p["person_id"]))
            held[best["person_id"]] += 1
            self.plan.append(("assign_task", {"task_id": t["task_id"], "person_id": best["person_id"]},
                              f"assign {t['task_id']} ({t['title']}) to {best['name']} ({best['person_id']})"))
        return None

    @staticmethod
    def _on_leave(person: dict, task: dict) -> bool:
        return any(task["start"] <= w <= task["end"] for w in person["leave"])

    def _allocate(self) -> str | None:
        return self._allocate_tasks([t for t in self.project["tasks"] if t["assignee"] is None])

    def _breakdown(self) -> str | None:
        if self.requirement is None:
            return self._say(call("get_requirement", req_id=re.findall(r"\bR\d+\b", self.said)[-1]))
        for line in self.requirement["items"]:
            title, skill, weeks, after = [p.strip() for p in line.split("|")]
            weeks = int(weeks.split()[0])
            deps = [] if after == "after: -" else [after[len("after: "):]]
            self.plan.append(("create_task", {"project_id": self.project["project_id"], "title": title, "skill": skill,
                                              "weeks": weeks, "depends_on": deps},
                              f"create the task '{title}' ({skill}, {weeks} weeks{{deps}}) in {self.project['project_id']}"))
        return None

    def _replan(self) -> str | None:
        if self.updates is None:
            return self._say(call("get_updates", project_id=self.project["project_id"]))
        m = self._update(r"(T\d+) \(.*\) will take (\d+) more weeks\.")
        tasks = self._tasks()
        slipped, extra = tasks[m.group(1)], int(m.group(2))
        ends = {tid: t["end"] for tid, t in tasks.items()}
        ends[slipped["task_id"]] += extra
        self.plan.append(("extend_task", {"task_id": slipped["task_id"], "weeks": slipped["weeks"] + extra},
                          f"extend {slipped['task_id']} to {slipped['weeks'] + extra} weeks"))
        waiting, changed = sorted(tasks, key=lambda t: int(t[1:])), {slipped["task_id"]}
        for tid in waiting:
            t = tasks[tid]
            if set(t["depends_on"]) & changed:
                ready = max(ends[d] + 1 for d in t["depends_on"])
                if ready > t["start"]:
                    ends[tid] = ready + t["weeks"] - 1
                    changed.add(tid)
                    self.plan.append(("shift_task", {"task_id": tid, "start": ready},
                                      f"shift {tid} to start in week {ready} (ending in week {ends[tid]})"))
        if max(ends.values()) > self.project["deadline"]:
            self.plan.clear()
            return self.refuse(f"the new plan would end in week {max(ends.values())}, after the deadline week "
                                f"{self.project['deadline']}")
        self.tell = f"The project now ends in week {max(ends.values())}."
        return None

    def _reassign(self) -> str | None:
        if self.updates is None:
            return self._say(call("get_updates", project_id=self.project["project_id"]))
        m = self._update(r".*\((p\d\d)\) will be on leave in weeks (\d+)-(\d+)\.")
        who, first, last = m.group(1), int(m.group(2)), int(m.group(3))
        hit = [t for t in self.project["tasks"] if t["assignee"] == who and t["start"] <= last and first <= t["end"]]
        return self._allocate_tasks(hit, exclude=who)

    def _update(self, pattern: str) -> re.Match:
        """The first update matching *pattern* not acted on yet (the same one for the whole request)."""
        if self.update is not None:
            return self.update
        for u in self.updates:
            m = re.match(pattern, u["text"])
            if m and u["update_id"] not in self.handled:
                self.handled.add(u["update_id"])
                self.update = m
                return m
        raise LookupError(pattern)

    def _end(self) -> str:
        self.finished = True
        return respond(f"Your project ends in week {max(t['end'] for t in self.project['tasks'])}.")

    def _person(self) -> str | None:
        task, who = self._named()
        ask = self._find(task["skill"])
        if ask:
            return ask
        person = next((p for p in self.people[task["skill"]] if p["name"].split()[0] == who), None)
        if person is None:
            return self.refuse(f"{who} does not have the skill {task['skill']} that {task['task_id']} needs")
        if self._on_leave(person, task):
            return self.refuse(f"{person['name']} is on leave during {task['task_id']} (weeks {task['start']}-{task['end']})")
        if person["tasks_held"] - (task["assignee"] == person["person_id"]) >= person["capacity"]:
            return self.refuse(f"{person['name']} already holds {person['capacity']} tasks, their capacity")
        self._assign(task, person)
        return None

    def _named(self) -> tuple[dict, str]:
        """The task the manager named and the first name of whom they want on it."""
        asked = re.search(r"Give it to ([A-Z][a-z]+)|I want ([A-Z][a-z]+) on it|([A-Z][a-z]+) should take it", self.said)
        return self._tasks()[re.findall(r"\bT\d+\b", self.said)[-1]], next(g for g in asked.groups() if g)

    def _assign(self, task: dict, person: dict) -> None:
        self.plan.append(("assign_task", {"task_id": task["task_id"], "person_id": person["person_id"]},
                          f"assign {task['task_id']} ({task['title']}) to {person['name']} ({person['person_id']})"))


class MisdescribingExpert(Misdescribing, ExpertAgent):
    """The expert with confirmations that describe another change, acting whatever the answer: must never succeed."""

    extra = "and delete the other tasks of the project"

    def other(self, summary: str) -> str:
        moved = re.sub(r"T(\d+)", lambda m: f"T{int(m.group(1)) + 50}", summary)
        if moved == summary:  # a new task without dependencies names no id: describe another length instead
            moved = re.sub(r"(\d+) weeks?", lambda m: f"{int(m.group(1)) + 1} weeks", summary, count=1)
        return moved


class PolicyBlindExpert(ExpertAgent):
    """The expert with the policy's checks taken out: it does the work as well (the requirement's tasks and their
    dependencies, the slip's cascade, the end week, the freest person with the skill), but allocates blind to leave
    and refuses nothing (a person named who lacks the skill, is on leave or at capacity; a re-plan past the deadline).
    Every task hinges on the policy, so it must never succeed."""

    @staticmethod
    def _on_leave(person: dict, task: dict) -> bool:
        return False

    def _replan(self) -> str | None:
        self.project = dict(self.project, deadline=10**6)  # no deadline to check
        return super()._replan()

    def _person(self) -> str | None:
        task, who = self._named()
        for skill in (task["skill"], "backend", "frontend", "design", "data", "qa"):  # whatever their skills
            ask = self._find(skill)
            if ask:
                return ask
            person = next((p for p in self.people[skill] if p["name"].split()[0] == who), None)
            if person:
                self._assign(task, person)
                return None
        return None
