"""The planning office a task starts from: nine people with skills, capacity and leave, and three projects with
a manager, a deadline and tasks (dependencies, start weeks, some staffed by rule 4)."""
from __future__ import annotations

import random

from agentgym_service.db import Database

from .domain import best_person
from .records import Person, Project, Task, new_database

FIRST = ("Ana", "Ben", "Carla", "Dev", "Elif", "Femi", "Gus", "Hana", "Ines", "Jun", "Kira", "Luca", "Maya", "Nils",
         "Omar", "Pia")
LAST = ("Lee", "Okafor", "Rossi", "Sato", "Novak", "Mensah", "Silva", "Brandt", "Haddad", "Ito")
SKILLS = ("backend", "frontend", "design", "data", "qa")
WORK = {"backend": ("build the API", "add payment webhooks", "migrate the database", "write the sync job"),
        "frontend": ("build the settings page", "add dark mode", "make the checkout responsive", "build the dashboard"),
        "design": ("design the onboarding flow", "refresh the icons", "draw the empty states", "design the email templates"),
        "data": ("set up the metrics pipeline", "build the churn report", "clean the event data", "train the ranking model"),
        "qa": ("write the regression tests", "run the load test", "test the mobile flows", "automate the smoke tests")}
PROJECTS = ("Atlas", "Beacon", "Cobalt", "Delta", "Ember", "Falcon")


def world(rng: random.Random) -> Database:
    db = new_database()
    firsts = rng.sample(FIRST, 9)
    for n, first in enumerate(firsts, 1):
        last = rng.choice(LAST)
        skills = sorted(rng.sample(SKILLS, rng.choice((1, 2, 2))))
        leave = sorted(rng.sample(range(2, 16), 2)) if rng.random() < 0.3 else []
        db.people.add(Person(f"p{n:02d}", f"{first} {last}", f"{first}.{last}@plan.example".lower(), skills,
                             rng.choice((2, 3, 3, 4)), leave))
    for skill in SKILLS:  # everyone's skill is covered twice
        for p in rng.sample([p for p in db.people if skill not in p.skills], max(0, 2 - sum(skill in p.skills for p in db.people))):
            p.skills.append(skill)
    names = rng.sample(PROJECTS, 3)
    n = 1
    for k, name in enumerate(names, 1):
        project = db.projects.add(Project(f"P{k}", name, f"p{k:02d}", rng.randint(14, 18)))
        ids: list[str] = []
        for _ in range(rng.randint(5, 7)):
            skill = rng.choice(SKILLS)
            deps = [rng.choice(ids)] if ids and rng.random() < 0.6 else []
            start = max((db.tasks[d].end + 1 for d in deps), default=rng.randint(1, 3))
            task = Task(f"T{n}", project.project_id, rng.choice(WORK[skill]), skill, rng.randint(1, 3), deps, start)
            db.tasks.add(task)
            ids.append(task.task_id)
            n += 1
            if rng.random() < 0.6:
                pid = best_person(db, task)
                task.assignee = pid
    return db
