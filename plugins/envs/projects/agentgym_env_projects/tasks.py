"""Task *k* of the planning office: people with skills, capacity and leave; three projects (one the
user's) with tasks and dependencies; and 1-4 requests of the user, in any order, at least one needing an
allowed change. Each request is built on the plan as the earlier ones leave it (the goal applies them in order).

Every task hinges on the written policy (:data:`HINGES`): it has an allocation where rule 4 gives some task
to someone other than whom an allocation blind to leave would pick (that person is on leave then,
:data:`DECIDED`), and maybe a request the policy forbids (a person rule 4 rules out, a slip past the
deadline). Doing the work without the policy's checks makes a forbidden write there and fails the task;
since a forbidden request never comes without such an allocation, refusing it by a lucky guess (which
request, which rule) and doing the rest without the policy fails too. A person the manager names for a task
may take it in more tasks than not (:data:`NAMED_BESIDE`): naming a person is no sign of a request to refuse.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from agentgym_service.db import Database
from agentgym_service.env import Task as EnvTask, goal_database
from agentgym_service.goal import Change, Goal, Mention, Output, Request, Slot
from agentgym_service.wording import Words

from .domain import (PlanDesk, allocation_problem, best_person, blind_choices, dependents, held, next_task_id,
                     title_key, unfit_reasons)
from .records import Requirement, Task, Update
from .wording import WORDS
from .world import SKILLS, WORK, world

INTENTS = ("breakdown", "allocate", "replan", "reassign", "end_week", "forbidden")
WRITES = ("breakdown", "allocate", "replan", "reassign", "assign")
#: How often a task with a forbidden request also has the manager name a person who may take a task (an allowed
#: ``assign``), and how often a task whose only named person is ruled out is drawn again: a request that names a
#: person is no sign that it is the one to refuse.
NAMED_BESIDE = 0.9
#: Requests whose right outcome the policy decides beyond the work asked for: an allocation where rule 4 (leave,
#: then free capacity) picks someone an allocation blind to leave would not, or a change the policy forbids
#: (rule 4's skill, leave and capacity, rule 6's deadline). Every task has one.
HINGES = ("allocate", "reassign", "forbidden")
#: The hinges the policy allows (an allocation that rule 4's leave clause decides): every task has one.
DECIDED = ("allocate", "reassign")


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
        skill = c.rng.choice([s for s in SKILLS if any(w not in c.used for w in WORK[s])])  # titles left
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
    """Rule 4 on the running goal, in task-id order, such that the policy decides at least one of them: rule 4's
    choice is not what an allocation blind to leave picks (:func:`_hinge`). None (the goal left as it was): some
    task has nobody, or none can be made to hinge."""
    changes = []
    before = {t.task_id: c.goal.tasks[t.task_id].assignee for t in tasks}
    leave = [(p, list(p.leave)) for db in (c.db, c.goal) for p in db.people]
    hinge = False
    for task in tasks:
        goal_task = c.goal.tasks[task.task_id]
        was, goal_task.assignee = goal_task.assignee, None
        hinge = hinge or _hinge(c, goal_task, exclude)
        pid = best_person(c.goal, goal_task, exclude)
        goal_task.assignee = was
        if pid is None:
            hinge = False
            break
        changes.append(Change("assign_task", {"task_id": task.task_id, "person_id": pid},
                              (task_mention(task.task_id), person_mention(c.db, pid)),
                              _entities(task=[task.task_id], person=[pid, *( [was] if was else [])],
                                        project=[c.project]),
                              f"assign {task.task_id} to {c.db.people[pid].name}"))
        goal_task.assignee = pid
    if hinge:
        return changes
    for tid, who in before.items():  # leave the goal as it was
        c.goal.tasks[tid].assignee = who
    for person, weeks in leave:
        person.leave = weeks
    return None


def _hinge(c: Ctx, task: Task, exclude: tuple[str, ...]) -> bool:
    """Whether rule 4 gives *task* (unassigned for now) to someone an allocation blind to leave would not pick
    (:func:`~.domain.blind_choices`); if not by chance, those people take leave in the task's weeks when they hold
    nothing then, and rule 4 still finds someone."""
    blind = blind_choices(c.goal, task, exclude)
    pick = best_person(c.goal, task, exclude)
    if pick is None or not blind:
        return False
    if pick not in blind:
        return True
    weeks = set(range(task.start, task.end + 1))
    if any(t.assignee in blind and weeks & set(range(t.start, t.end + 1))
           for db in (c.db, c.goal) for t in db.tasks if t.task_id != task.task_id):
        return False
    leave = {pid: list(c.goal.people[pid].leave) for pid in blind}
    for db in (c.db, c.goal):
        for pid in blind:
            db.people[pid].leave = sorted(set(db.people[pid].leave) | weeks)
    pick = best_person(c.goal, task, exclude)
    if pick is not None and pick not in blind:
        return True
    for db in (c.db, c.goal):
        for pid, was in leave.items():
            db.people[pid].leave = list(was)
    return False


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
        slips = range(5, 13) if over else range(1, 5)  # past the deadline takes a long delay
        for slip in c.rng.sample(slips, len(slips)):
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
                       elicit=("project",), reads=(f"updates:{c.project}", f"project:{c.project}"), reasons=("deadline",))
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
        if any(t.task_id not in c.db.tasks or c.db.tasks[t.task_id].assignee != holder for t in affected):
            continue  # an earlier request gave the holder that work: the leave would forbid its own change
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


def named_person(c: Ctx, allowed: bool = False) -> Request:
    """The manager wants a person on a staffed task whom rule 4 never allows there: one without the task's skill, on
    leave in its weeks, or already at capacity; *allowed*: one who may take it (the skill, free, not on leave), asked
    for in the same words, so that the name alone never tells a refusal."""
    staffed = [t for t in c.mine() if t.task_id not in c.used and t.assignee]  # staffed: not "open" work
    if not staffed:
        raise LookupError("no staffed task")
    task = c.goal.tasks[c.rng.choice(staffed).task_id]
    was, task.assignee = task.assignee, None  # as assign_task checks it: the holder's slot is free
    try:
        if allowed:
            fit = [p.person_id for p in c.goal.people if p.person_id != was and not unfit_reasons(c.goal, task, p.person_id)]
            pid = c.rng.choice(fit) if fit else None
        else:
            pid = next(filter(None, (_unfit(c, task, why, was) for why in (c.rng.choice(("skill", "leave", "capacity")),
                                                                               "leave", "skill"))), None)
        why, reasons = (allocation_problem(c.goal, task, pid), unfit_reasons(c.goal, task, pid)) if pid else (None, ())
    finally:
        task.assignee = was
    if pid is None:
        raise LookupError("nobody to name")
    c.used.add(task.task_id)
    person = c.db.people[pid]
    w = c.words
    slots = (_project_slot(c), Slot("task", task.task_id, w("task", task=task.task_id)),
             Slot("person", person.name.split()[0], w("person", name=person.name.split()[0])))
    change = Change("assign_task", {"task_id": task.task_id, "person_id": pid},
                    (task_mention(task.task_id), person_mention(c.db, pid)),
                    _entities(task=[task.task_id], person=[pid], project=[c.project]),
                    f"assign {task.task_id} to {person.name}")
    if allowed:
        return Request("assign", w.all("open_person"), slots, (change,))
    return Request("assign", w.all("open_person"), slots, (change,), forbidden=why, elicit=("task", "person"),
                   reads=(f"project:{c.project}",), reasons=reasons)


def _unfit(c: Ctx, task: Task, why: str, holder: str | None) -> str | None:
    """Someone rule 4 forbids on *task* (its holder aside) for reason *why*; for leave, a person with the skill and room
    takes leave in some of its weeks when they hold nothing then. None: nobody."""
    if why == "skill":
        return c.rng.choice([p.person_id for p in c.goal.people if task.skill not in p.skills])
    skilled = [p for p in c.goal.people if task.skill in p.skills and p.person_id != holder]
    if why == "capacity":
        full = [p.person_id for p in skilled if held(c.goal, p.person_id) >= p.capacity]
        return c.rng.choice(full) if full else None
    free = [p for p in skilled if held(c.goal, p.person_id) < p.capacity]
    away = [p.person_id for p in free if allocation_problem(c.goal, task, p.person_id)]
    if away:
        return c.rng.choice(away)
    first = c.rng.randint(task.start, task.end)
    weeks = set(range(first, c.rng.randint(first, task.end) + 1))
    idle = [p.person_id for p in free if not any(t.assignee == p.person_id and weeks & set(range(t.start, t.end + 1))
                                                 for db in (c.db, c.goal) for t in db.tasks)]
    if not idle:
        return None
    pid = c.rng.choice(idle)
    for db in (c.db, c.goal):
        db.people[pid].leave = sorted(set(db.people[pid].leave) | weeks)
    return pid


def forbidden(c: Ctx) -> Request:
    if c.rng.random() < 0.5:
        try:
            return replan(c, over=True)
        except LookupError:
            pass
    return named_person(c)


BUILDERS = {"breakdown": breakdown, "allocate": allocate, "replan": replan, "reassign": reassign, "end_week": end_week,
            "forbidden": forbidden, "assign": lambda c: named_person(c, allowed=True)}


# -- the task ----------------------------------------------------------------------------------------
def make_task(task_id: int, seed: int, wording: str, intents: tuple[str, ...]) -> EnvTask:
    """Task *task_id*: its intent's request first, then what makes the task hinge on the policy and need a change."""
    for attempt in range(20):
        rng = random.Random(f"projects-task:{seed}:{task_id}" + (f":{attempt}" if attempt else ""))
        task = _make_task(task_id, rng, wording, intents[task_id % len(intents)], pair_named=attempt < 10)
        if task is not None:
            return task
    raise RuntimeError(f"projects: no task {task_id} with a request the policy decides (seed {seed})")


def _make_task(task_id: int, rng: random.Random, wording: str, intent: str, pair_named: bool = True) -> EnvTask | None:
    db = world(rng)
    project = rng.choice([p.project_id for p in db.projects])
    user = db.projects[project].manager
    kinds = [intent]
    if intent not in HINGES:  # every task has a request whose right outcome only the policy gives
        kinds.append(rng.choice(HINGES))
    if "forbidden" in kinds and not set(kinds) & set(DECIDED):  # a lucky guessed refusal of it still loses
        kinds.append(rng.choice(DECIDED))
    if not set(kinds) & set(WRITES):  # and one allowed change, so refusing everything fails too
        kinds.append(rng.choice(WRITES))
    if rng.random() < (0.5 if len(kinds) == 1 else 0.15 if len(kinds) == 2 else 0):
        kinds.append(rng.choice(WRITES))
    if "forbidden" in kinds and rng.random() < NAMED_BESIDE:
        kinds.append("assign")
    rng.shuffle(kinds)  # the request the policy decides may come at any point
    if "reassign" in kinds:  # its leave changes who may take what: raised first, every later request sees it
        kinds.remove("reassign")
        kinds.insert(0, "reassign")
    c = Ctx(rng, db, db.copy(), user, project, Words(WORDS, rng, wording), set())
    requests = []
    for kind in kinds:
        request = _request(c, kind)
        requests.append(request)
        desk = PlanDesk(c.goal)
        desk.identity = user
        goal_database(c.goal, desk, [request])  # later requests are built on the office as this one leaves it
    if not any(r.kind in DECIDED for r in requests):
        return None
    if not any(r.changes and not r.forbidden for r in requests):
        return None
    named = [r for r in requests if r.kind == "assign"]
    if pair_named and named and all(r.forbidden for r in named) and rng.random() < NAMED_BESIDE:
        return None  # mostly, a person named for a task the policy rules out comes with one who may take a task
    person = db.people[user]
    identity = (Slot("email", person.email, c.words("email", email=person.email)),)
    goal = Goal(person.name, identity, tuple(requests), {}, rng.choice(("polite", "terse", "chatty")), wording)
    return EnvTask(task_id, intent, db, c.goal, goal, world=None)


def _request(c: Ctx, kind: str) -> Request:
    """A request of *kind* on the plan as it stands; when the plan has none (nothing open, nothing to slip), another
    hinge for a hinge, and new work, which always fits, last."""
    others = c.rng.sample([h for h in HINGES if h != kind], len(HINGES) - 1) if kind in HINGES else []
    for k in [kind, *others]:
        try:
            return BUILDERS[k](c)
        except LookupError:
            pass
    return breakdown(c)
