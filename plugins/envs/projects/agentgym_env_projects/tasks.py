"""Task *k* of the planning office: people with skills, capacity and leave; three projects (one the
user's) with tasks and dependencies; and 1-3 requests of the user, at least one needing a change.
Each request is built on the plan as the earlier ones leave it (the goal applies them in order).
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from agentgym_service.db import Database
from agentgym_service.env import Task as EnvTask, goal_database
from agentgym_service.goal import Change, Goal, Mention, Output, Request, Slot
from agentgym_service.wording import Words

from .domain import PlanDesk, best_person, dependents, next_task_id, title_key
from .records import Person, Project, Requirement, Task, Update, new_database
from .wording import WORDS

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
INTENTS = ("breakdown", "allocate", "replan", "reassign", "end_week", "forbidden")
WRITES = ("breakdown", "allocate", "replan", "reassign")
QUESTIONS = ("end_week", "forbidden")


@dataclass
class Ctx:
    rng: random.Random
    db: Database
    goal: Database
    user: str
    project: str
    words: Words
    used: set

    def add(self, table: str, row) -> None:
        getattr(self.db, table).add(row)
        getattr(self.goal, table).add(_copy(row))

    def mine(self, db: Database | None = None) -> list[Task]:
        return sorted((t for t in (db or self.goal).tasks if t.project_id == self.project), key=lambda t: int(t.task_id[1:]))


def _copy(row):
    import copy
    return copy.deepcopy(row)


def _project_slot(c: Ctx) -> Slot:
    return Slot("project", c.project, c.words("project", project=c.project))


def task_mention(task_id: str) -> Mention:
    return Mention("task", (task_id,), f"It's task {task_id}.")


def person_mention(db: Database, pid: str) -> Mention:
    p = db.people[pid]
    return Mention("person", (pid, p.name, p.name.split()[0]), f"It should be {p.name}.")


def _entities(**kinds) -> dict:
    base = {"task": frozenset(), "person": frozenset(), "project": frozenset(), "week": frozenset()}
    return {**base, **{k: frozenset(v) for k, v in kinds.items()}}


# -- requests -------------------------------------------------------------------------------------
def breakdown(c: Ctx) -> Request:
    req_id = f"R{len(c.db.requirements) + 1}"
    n, items, changes, ids = c.rng.randint(2, 3), [], [], []
    next_id = int(next_task_id(c.goal)[1:])
    deadline = c.goal.projects[c.project].deadline
    ends: dict[str, int] = {}
    for k in range(n):
        skill = c.rng.choice(SKILLS)
        title = c.rng.choice([w for w in WORK[skill] if w not in c.used])
        c.used.add(title)
        weeks = c.rng.randint(1, 3)
        after = ids[-1] if ids and c.rng.random() < 0.6 else None
        start = ends[after] + 1 if after else 1
        if start + weeks - 1 > deadline:
            after, start = None, 1
        task_id = f"T{next_id + k}"
        ids.append(task_id)
        ends[task_id] = start + weeks - 1
        items.append(f"{title} | {skill} | {weeks} weeks | after: {items[-1].split(' | ')[0] if after else '-'}")
        deps = [after] if after else []
        changes.append(Change("create_task", {"project_id": c.project, "title": title_key(title), "skill": skill,
                                              "weeks": weeks, "depends_on": deps},
                              (Mention("title", (title,), f"The task is '{title}'."),
                               Mention("skill", (skill,), f"It needs {skill}."),
                               Mention("weeks", (f"{weeks} weeks", f"{weeks} week"), f"It takes {weeks} weeks."),
                               *(task_mention(d) for d in deps)),
                              _entities(task=deps, project=[c.project]),
                              f"create '{title}' ({skill}, {weeks} weeks) in {c.project}"))
    title = c.rng.choice(("Checkout v2", "Team accounts", "Usage analytics", "Mobile launch", "Self-serve billing"))
    c.add("requirements", Requirement(req_id, c.project, title, items))
    w = c.words
    return Request("breakdown", w.all("open_breakdown"), (_project_slot(c), Slot("requirement", req_id,
                                                                                 w("requirement", req=req_id))),
                   tuple(changes))


def _assignments(c: Ctx, tasks: list[Task], exclude: tuple[str, ...] = ()) -> list[Change] | None:
    """Rule 4 on the running goal, in task-id order (None: some task has nobody)."""
    changes, before = [], {t.task_id: c.goal.tasks[t.task_id].assignee for t in tasks}
    for task in tasks:
        goal_task = c.goal.tasks[task.task_id]
        was, goal_task.assignee = goal_task.assignee, None
        pid = best_person(c.goal, goal_task, exclude)
        goal_task.assignee = was
        if pid is None:
            for tid, who in before.items():  # leave the goal as it was
                c.goal.tasks[tid].assignee = who
            return None
        changes.append(Change("assign_task", {"task_id": task.task_id, "person_id": pid},
                              (task_mention(task.task_id), person_mention(c.db, pid)),
                              _entities(task=[task.task_id], person=[pid, *( [was] if was else [])],
                                        project=[c.project]),
                              f"assign {task.task_id} to {c.db.people[pid].name}"))
        goal_task.assignee = pid
    return changes


def allocate(c: Ctx) -> Request:
    open_tasks = [t for t in c.mine() if t.assignee is None]
    changes = _assignments(c, open_tasks)
    for t in open_tasks:
        c.used.add(t.task_id)
    if not open_tasks or changes is None:
        raise LookupError("no task to allocate")
    return Request("allocate", c.words.all("open_allocate"), (_project_slot(c),), tuple(changes))


def replan(c: Ctx, over: bool = False) -> Request:
    deadline = c.goal.projects[c.project].deadline
    for task in c.rng.sample(c.mine(), len(c.mine())):
        after = dependents(c.goal, task.task_id)
        if not after or task.task_id in c.used:
            continue
        for slip in c.rng.sample((1, 2, 3, 4), 4):
            shifts, ends = [], {task.task_id: task.start + task.weeks + slip - 1}
            for dep in after:
                ready = max(ends.get(d, c.goal.tasks[d].end) + 1 for d in dep.depends_on)
                start = max(dep.start, ready)
                ends[dep.task_id] = start + dep.weeks - 1
                if start != dep.start:
                    shifts.append((dep.task_id, start))
            late = max(ends.values()) > deadline
            if late == over and shifts:
                break
        else:
            continue
        break
    else:
        raise LookupError("no task to slip")
    c.used.add(task.task_id)
    update = f"U{len(c.db.updates) + 1}"
    c.add("updates", Update(update, c.project, f"{task.task_id} ({task.title}) will take {slip} more weeks."))
    new = task.weeks + slip
    changes = [Change("extend_task", {"task_id": task.task_id, "weeks": new},
                      (task_mention(task.task_id), Mention("weeks", (f"{new} weeks",), f"It takes {new} weeks now.")),
                      _entities(task=[task.task_id], project=[c.project]), f"extend {task.task_id} to {new} weeks")]
    changes += [Change("shift_task", {"task_id": tid, "start": start},
                       (task_mention(tid), Mention("week", (f"week {start}",), f"It should start in week {start}.")),
                       _entities(task=[tid], project=[c.project], week=[f"week {start}", f"week {start + c.goal.tasks[tid].weeks - 1}"]),
                       f"shift {tid} to start in week {start}") for tid, start in shifts]
    w = c.words
    if over:
        return Request("replan", w.all("open_replan"), (_project_slot(c),), tuple(changes),
                       forbidden=f"the re-planned {c.project} would end after its deadline week {deadline}",
                       elicit=("project",), reads=(f"updates:{c.project}", f"project:{c.project}"))
    project_end = max(max(ends.values()), max(t.end for t in c.mine()))
    out = Output("end", "token", f"week {project_end}", f"updates:{c.project}", w("q_end"), "week")
    return Request("replan", w.all("open_replan"), (_project_slot(c),), tuple(changes), (out,))


def reassign(c: Ctx) -> Request:
    for task in c.rng.sample(c.mine(), len(c.mine())):
        holder = task.assignee
        if holder is None or task.task_id in c.used:
            continue
        weeks = list(range(task.start, task.end + 1))
        affected = [t for t in c.mine() if t.assignee == holder and set(weeks) & set(range(t.start, t.end + 1))]
        for p in (c.db, c.goal):
            p.people[holder].leave = sorted(set(p.people[holder].leave) | set(weeks))
        changes = _assignments(c, affected, exclude=(holder,))
        if changes is not None:
            break
        for p in (c.db, c.goal):
            p.people[holder].leave = sorted(set(p.people[holder].leave) - set(weeks))
    else:
        raise LookupError("no task to reassign")
    c.used.update(t.task_id for t in affected)
    name = c.db.people[holder].name
    c.add("updates", Update(f"U{len(c.db.updates) + 1}", c.project,
                            f"{name} ({holder}) will be on leave in weeks {weeks[0]}-{weeks[-1]}."))
    return Request("reassign", c.words.all("open_reassign"), (_project_slot(c),), tuple(changes))


def end_week(c: Ctx) -> Request:
    end = max(t.end for t in c.mine())
    out = Output("end", "token", f"week {end}", f"project:{c.project}", c.words("q_end"), "week")
    return Request("end_week", c.words.all("open_end"), (_project_slot(c),), outputs=(out,))


def wrong_skill(c: Ctx) -> Request:
    task = c.rng.choice([t for t in c.mine() if t.task_id not in c.used and t.assignee])  # staffed: not "open" work
    c.used.add(task.task_id)
    person = c.rng.choice([p for p in c.db.people if task.skill not in p.skills])
    w = c.words
    slots = (_project_slot(c), Slot("task", task.task_id, w("task", task=task.task_id)),
             Slot("person", person.name.split()[0], w("person", name=person.name.split()[0])))
    change = Change("assign_task", {"task_id": task.task_id, "person_id": person.person_id},
                    (task_mention(task.task_id), person_mention(c.db, person.person_id)),
                    _entities(task=[task.task_id], person=[person.person_id], project=[c.project]),
                    f"assign {task.task_id} to {person.name}")
    return Request("assign", w.all("open_person"), slots, (change,),
                   forbidden=f"{person.name} does not have the skill {task.skill}", elicit=("task", "person"),
                   reads=(f"project:{c.project}",))


def forbidden(c: Ctx) -> Request:
    if c.rng.random() < 0.5:
        try:
            return replan(c, over=True)
        except LookupError:
            pass
    return wrong_skill(c)


BUILDERS = {"breakdown": breakdown, "allocate": allocate, "replan": replan, "reassign": reassign, "end_week": end_week,
            "forbidden": forbidden}


# -- the office and the task -----------------------------------------------------------------------
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


def make_task(task_id: int, seed: int, wording: str, intents: tuple[str, ...]) -> EnvTask:
    rng = random.Random(f"projects-task:{seed}:{task_id}")
    intent = intents[task_id % len(intents)]
    db = world(rng)
    project = rng.choice([p.project_id for p in db.projects])
    user = db.projects[project].manager
    kinds = [intent, rng.choice(WRITES)] if intent in QUESTIONS else [intent]
    if intent in QUESTIONS and rng.random() < 0.3 or intent not in QUESTIONS and rng.random() < 0.5:
        kinds.append(rng.choice(WRITES))
    if "reassign" in kinds:  # its leave changes who may take what: raised first, every later request sees it
        kinds.remove("reassign")
        kinds.insert(0, "reassign")
    c = Ctx(rng, db, db.copy(), user, project, Words(WORDS, rng, wording), set())
    requests = []
    for kind in kinds:
        try:
            request = BUILDERS[kind](c)
        except LookupError:  # nothing left of that kind in this plan: new work always fits
            request = breakdown(c)
        requests.append(request)
        desk = PlanDesk(c.goal)
        desk.identity = user
        goal_database(c.goal, desk, [request])  # later requests are built on the office as this one leaves it
    person = db.people[user]
    identity = (Slot("email", person.email, c.words("email", email=person.email)),)
    goal = Goal(person.name, identity, tuple(requests), {}, rng.choice(("polite", "terse", "chatty")), wording)
    return EnvTask(task_id, intent, db, c.goal, goal, world=None)
