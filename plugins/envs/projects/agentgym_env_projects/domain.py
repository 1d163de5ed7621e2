"""The planning office's tools, policy, the manager's vocabulary, and the desk that runs the tools.

Weeks are numbered from 1 (this week). A task runs ``weeks`` weeks from ``start``; it starts
the week after its last dependency ends. People hold at most ``capacity`` tasks. Projects and
requirements are visible to their manager only (reading another manager's ends the episode).
"""
from __future__ import annotations

import re

from agentgym_service.db import Database, as_json
from agentgym_service.desk import Desk, PrivacyError, ToolError
from agentgym_service.goal import Lexicon
from agentgym_service.tools import Param, Tool, ToolSet

from .records import Person, Task

TASK = Param("task_id", "such as T7")
PROJECT = Param("project_id", "such as P2")
TOOLS = ToolSet((
    Tool("respond", "talk to the project manager", (Param("message", "what to say"),), kind="respond"),
    Tool("identify", "authenticate the manager by work email", (Param("email", "their work email"),), kind="auth"),
    Tool("get_project", "a project of the manager: deadline and tasks (skill, weeks, dependencies, start, end, assignee)",
         (PROJECT,)),
    Tool("get_requirement", "a requirement's work items", (Param("req_id", "such as R4"),)),
    Tool("get_updates", "a project's progress updates", (PROJECT,)),
    Tool("find_people", "people with a skill: capacity, tasks held, leave weeks", (Param("skill", "such as backend"),)),
    Tool("create_task", "add a task to a project",
         (PROJECT, Param("title", "the work item's title"), Param("skill", "the skill it needs"),
          Param("weeks", "how many weeks", "integer"), Param("depends_on", "ids of tasks it waits for", "array",
                                                             required=False)), kind="write"),
    Tool("assign_task", "give a task to a person", (TASK, Param("person_id", "such as p04")), kind="write"),
    Tool("extend_task", "set a task's new length after a slip", (TASK, Param("weeks", "the new total", "integer")),
         kind="write"),
    Tool("shift_task", "move a task's start week", (TASK, Param("start", "the week it starts", "integer")), kind="write"),
    Tool("transfer_to_human", "hand over to the PMO; ends the conversation", (Param("summary", "what they need"),),
         kind="end"),
))

POLICY = """\
Policy:
1. Authenticate the manager with identify first, and work only on their projects: never open another manager's \
project or requirement (that ends the conversation). The identity cannot change.
2. Before each change, describe it exactly (a new task's title, skill, weeks and dependencies; who gets which task; a \
task's new length or start week) and ask the manager to confirm; make only the change they said yes to. One change \
per confirmation.
3. A requirement's work items become tasks of its project in the order listed, with the item's title, skill and \
weeks, depending on the tasks created for the items it comes after.
4. Allocation: give each task, in task-id order, to the person who has its skill, is not on leave in any of its weeks, \
and has the most free capacity (capacity minus tasks held; ties: the lowest person id). A task the manager wants a \
named person on goes to that person when they may take it. Never above capacity, never without the skill, never \
during leave: refuse to give a task to someone this rules out, saying why (the skill, the leave or the capacity).
5. A slip: set the task's new length with extend_task, then shift every task that depends on it, directly or not, in \
task-id order, to start the week after its last dependency ends. Leave: reassign the person's tasks of the project \
that overlap the leave, by rule 4.
6. No task may end after its project's deadline: refuse a change that would (or transfer_to_human), saying why. Tell \
the manager what they ask (end weeks)."""

ASKS = {
    "email": re.compile(r"e-?mail|\bidentif|\bverify|\bauthenticat"),
    "project": re.compile(r"\bwhich project\b|\bproject (?:id|number|code)\b|\bwhat project\b"),
    "requirement": re.compile(r"\bwhich requirement\b|\brequirement (?:id|number)\b|\bwhat requirement\b"),
    "task": re.compile(r"\bwhich task\b|\btask (?:id|number)\b|\bwhat task\b"),
    "person": re.compile(r"\bwho\b|\bwhich person\b|\bto whom\b|\bwhom\b"),
}
#: Why the policy forbids a request (what a refusal must say): rule 4 (the skill, leave, capacity), rule 6 (the
#: deadline), rule 5 (dependencies) and rule 1 (another manager's project).
REASONS = {
    "skill": ("skill", "skills", "qualified", "qualification"),
    "leave": ("on leave", "leave", "vacation", "holiday", "absent"),
    "capacity": ("capacity", "too many tasks", "fully booked", "overloaded", "no room"),
    "deadline": ("deadline", "too late"),
    "dependencies": ("dependency", "dependencies", "depends on"),
    "other_project": ("another manager", "other manager's", "not your project"),
}

LEXICON = Lexicon(
    asks=ASKS,
    verbs={"create_task": ("create", "add"), "assign_task": ("assign", "give"), "extend_task": ("extend", "lengthen"),
           "shift_task": ("shift", "move", "push")},
    exclusive={"create_task": ("create",), "assign_task": ("assign",), "extend_task": ("extend",),
               "shift_task": ("shift",)},
    entities={"task": (re.compile(r"\bT\d+\b"), lambda m: m), "person": (re.compile(r"\bp\d{2}\b"), lambda m: m),
              "project": (re.compile(r"\bP\d\b"), lambda m: m), "week": (re.compile(r"\bweek \d+\b", re.I),
                                                                        lambda m: m.lower())},
    vocabularies={},
    reasons=REASONS)


def title_key(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9 ]", " ", str(text).lower()).split())


def held(db: Database, person_id: str) -> int:
    return sum(t.assignee == person_id for t in db.tasks)


def allocation_problem(db: Database, task: Task, person_id: str) -> str | None:
    person = db.people[person_id]
    if task.skill not in person.skills:
        return f"{person.name} ({person_id}) does not have the skill {task.skill}"
    if any(task.start <= w <= task.end for w in person.leave):
        return f"{person.name} ({person_id}) is on leave during {task.task_id} (weeks {task.start}-{task.end})"
    if held(db, person_id) >= person.capacity:
        return f"{person.name} ({person_id}) already holds {person.capacity} tasks, their capacity"
    return None


def unfit_reasons(db: Database, task: Task, person_id: str) -> tuple[str, ...]:
    """Every reason of rule 4 that rules *person_id* out for *task* (names of :data:`REASONS`; empty: they may take it)."""
    person = db.people[person_id]
    return tuple(name for name, unfit in (
        ("skill", task.skill not in person.skills), ("leave", any(task.start <= w <= task.end for w in person.leave)),
        ("capacity", held(db, person_id) >= person.capacity)) if unfit)


def best_person(db: Database, task: Task, exclude: tuple[str, ...] = ()) -> str | None:
    """Policy rule 4: who gets *task*."""
    fits = [p for p in db.people if p.person_id not in exclude and allocation_problem(db, task, p.person_id) is None]
    if not fits:
        return None
    return min(fits, key=lambda p: (-(p.capacity - held(db, p.person_id)), p.person_id)).person_id


def blind_choices(db: Database, task: Task, exclude: tuple[str, ...] = ()) -> set[str]:
    """Whom an allocation that ignores rule 4's leave clause would pick for *task*: the person with the skill and
    room left who holds the fewest tasks, read three ways (most free capacity, most free share of capacity, fewest
    tasks held; ties: the lowest id). A task where rule 4's choice is none of them hinges on the policy."""
    fits = [p for p in db.people if p.person_id not in exclude and task.skill in p.skills
            and held(db, p.person_id) < p.capacity]
    if not fits:
        return set()
    def free(p: Person) -> int:
        return p.capacity - held(db, p.person_id)

    readings = (lambda p: -free(p), lambda p: -free(p) / p.capacity, lambda p: held(db, p.person_id))
    return {min(fits, key=lambda p: (reading(p), p.person_id)).person_id for reading in readings}


def next_task_id(db: Database) -> str:
    return f"T{1 + max((int(t.task_id[1:]) for t in db.tasks), default=0)}"


def dependents(db: Database, task_id: str) -> list[Task]:
    """Every task that waits for *task_id*, directly or not, in task-id order."""
    found, frontier = set(), {task_id}
    while frontier:
        frontier = {t.task_id for t in db.tasks if set(t.depends_on) & frontier} - found
        found |= frontier
    return sorted((db.tasks[t] for t in found), key=lambda t: int(t.task_id[1:]))


class PlanDesk(Desk):
    def identify(self, email: str) -> str:
        return self.identify_by_email(self.db.people, email, "person_id")

    def _project(self, project_id: str):
        me = self.require_identity()
        project = self.db.projects.get(project_id.strip().upper())
        if project is None:
            raise ToolError(f"No project {project_id[:20]}.")
        if project.manager != me:
            raise PrivacyError(f"{project.project_id} is another manager's project.")
        return project

    def _task(self, task_id: str) -> Task:
        task = self.db.tasks.get(task_id.strip().upper())
        if task is None:
            raise ToolError(f"No task {task_id[:20]}; get_project lists them.")
        self._project(task.project_id)
        return task

    def get_project(self, project_id: str) -> str:
        project = self._project(project_id)
        self.saw(f"project:{project.project_id}")
        tasks = [{"task_id": t.task_id, "title": t.title, "skill": t.skill, "weeks": t.weeks,
                  "depends_on": t.depends_on, "start": t.start, "end": t.end, "assignee": t.assignee}
                 for t in sorted(self.db.tasks, key=lambda t: int(t.task_id[1:])) if t.project_id == project.project_id]
        return as_json({"project_id": project.project_id, "name": project.name, "deadline": project.deadline,
                        "tasks": tasks})

    def get_requirement(self, req_id: str) -> str:
        req = self.db.requirements.get(req_id.strip().upper())
        if req is None:
            raise ToolError(f"No requirement {req_id[:20]}.")
        self._project(req.project_id)
        self.saw(f"requirement:{req.req_id}")
        return as_json(req)

    def get_updates(self, project_id: str) -> str:
        project = self._project(project_id)
        self.saw(f"updates:{project.project_id}")
        return as_json([{"update_id": u.update_id, "text": u.text} for u in self.db.updates
                        if u.project_id == project.project_id])

    def find_people(self, skill: str) -> str:
        key = skill.strip().lower()
        return as_json([{"person_id": p.person_id, "name": p.name, "skills": p.skills, "capacity": p.capacity,
                         "tasks_held": held(self.db, p.person_id), "leave": p.leave}
                        for p in self.db.people if key in p.skills])

    # -- checks and changes -------------------------------------------------------------------
    def check_create_task(self, project_id: str, title: str, skill: str, weeks: int, depends_on: list[str] = ()):
        project = self._project(project_id)
        deps = sorted({self._task(d).task_id for d in depends_on}, key=lambda t: int(t[1:]))
        if weeks < 1 or weeks > 52:
            raise ToolError("weeks must be 1 to 52.", invalid=True)
        start = max((self.db.tasks[d].end + 1 for d in deps), default=1)
        rule = None
        if start + weeks - 1 > project.deadline:
            rule = f"the task would end in week {start + weeks - 1}, after {project.project_id}'s deadline week {project.deadline}"
        return {"project_id": project.project_id, "title": title_key(title), "skill": skill.strip().lower(),
                "weeks": weeks, "depends_on": deps}, rule

    def apply_create_task(self, project_id: str, title: str, skill: str, weeks: int, depends_on: list[str]) -> str:
        start = max((self.db.tasks[d].end + 1 for d in depends_on), default=1)
        task = self.db.tasks.add(Task(next_task_id(self.db), project_id, title, skill, weeks, list(depends_on), start))
        return f"Created {task.task_id} '{title}' in {project_id}: weeks {task.start}-{task.end}."

    def check_assign_task(self, task_id: str, person_id: str):
        task = self._task(task_id)
        pid = person_id.strip().lower()
        if pid not in self.db.people:
            raise ToolError(f"No person {person_id[:20]}; find_people lists them.")
        current = task.assignee
        task.assignee = None  # reassigning: the current holder's slot is free
        try:
            rule = allocation_problem(self.db, task, pid)
        finally:
            task.assignee = current
        return {"task_id": task.task_id, "person_id": pid}, rule

    def apply_assign_task(self, task_id: str, person_id: str) -> str:
        self.db.tasks[task_id].assignee = person_id
        return f"Assigned {task_id} to {person_id}."

    def check_extend_task(self, task_id: str, weeks: int):
        task = self._task(task_id)
        deadline = self.db.projects[task.project_id].deadline
        rule = None if task.start + weeks - 1 <= deadline else f"{task.task_id} would end after the deadline week {deadline}"
        if weeks < 1 or weeks > 52:
            raise ToolError("weeks must be 1 to 52.", invalid=True)
        return {"task_id": task.task_id, "weeks": weeks}, rule

    def apply_extend_task(self, task_id: str, weeks: int) -> str:
        task = self.db.tasks[task_id]
        task.weeks = weeks
        return f"{task_id} now runs weeks {task.start}-{task.end}."

    def check_shift_task(self, task_id: str, start: int):
        task = self._task(task_id)
        ready = max((self.db.tasks[d].end + 1 for d in task.depends_on), default=1)
        deadline = self.db.projects[task.project_id].deadline
        if start < ready:
            rule = f"{task.task_id} cannot start before week {ready}, after its dependencies end"
        elif start + task.weeks - 1 > deadline:
            rule = f"{task.task_id} would end in week {start + task.weeks - 1}, after the deadline week {deadline}"
        else:
            rule = None
        return {"task_id": task.task_id, "start": start}, rule

    def apply_shift_task(self, task_id: str, start: int) -> str:
        task = self.db.tasks[task_id]
        task.start = start
        return f"{task_id} now runs weeks {task.start}-{task.end}."
