"""The planning office's records: people, projects, requirements, tasks, progress updates. Time is in weeks."""
from __future__ import annotations

from dataclasses import dataclass, field

from agentgym_service.db import Database, Table


@dataclass
class Person:
    person_id: str
    name: str
    email: str
    skills: list[str]
    #: How many unfinished tasks the person can hold at once.
    capacity: int
    #: Weeks the person is on leave.
    leave: list[int] = field(default_factory=list)


@dataclass
class Project:
    project_id: str
    name: str
    manager: str
    #: The last week the project's tasks may end in.
    deadline: int


@dataclass
class Requirement:
    req_id: str
    project_id: str
    title: str
    #: Work items, in order: "title | skill | weeks | after: <earlier title or ->".
    items: list[str]


@dataclass
class Task:
    task_id: str
    project_id: str
    title: str
    skill: str
    weeks: int
    depends_on: list[str]
    start: int
    assignee: str | None = None

    @property
    def end(self) -> int:
        """The last week the task runs in."""
        return self.start + self.weeks - 1


@dataclass
class Update:
    update_id: str
    project_id: str
    text: str


def new_database() -> Database:
    return Database(people=Table(Person, "person_id"), projects=Table(Project, "project_id"),
                    requirements=Table(Requirement, "req_id"), tasks=Table(Task, "task_id"),
                    updates=Table(Update, "update_id"))
