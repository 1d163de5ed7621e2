"""The project manager's words: phrase pools per line, ``(iid, ood)`` (the OOD split draws only from the second)."""
from __future__ import annotations

WORDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "open_breakdown": (("Please add the tasks for a new requirement to my project.", "Could you break a requirement "
                        "down into tasks for me?"), ("A new requirement came in; can you turn it into work in the plan?",)),
    "open_allocate": (("Could you assign the unassigned tasks of my project?", "Please allocate the open tasks in my "
                       "project."), ("Some work in my plan has no owner yet; can you staff it?",)),
    "open_replan": (("One of our tasks is slipping; please update the plan.", "There's a delay in my project, can you "
                     "re-plan it?"), ("We're running behind on something; could you rework the schedule?",)),
    "open_reassign": (("Someone is going on leave; please fix the allocation.", "Can you fix the allocation after the "
                       "latest leave update?"), ("A teammate will be away; can you rebalance their work?",)),
    "open_end": (("When will my project end?", "Which week does my project finish?"),
                 ("What's the finish week of my plan looking like?",)),
    "open_person": (("I'd like a specific person on one of our tasks.",), ("I want to hand a task to someone in "
                                                                           "particular.",)),
    "email": (("My email is {email}.", "It's {email}."), ("You can find me under {email}.",)),
    "project": (("It's project {project}.", "Project {project}."), ("We're talking about {project}.",)),
    "requirement": (("It's requirement {req}.", "Requirement {req}."), ("The one filed as {req}.",)),
    "task": (("It's task {task}.", "Task {task}."), ("The one numbered {task}.",)),
    "person": (("Give it to {name}.", "I want {name} on it."), ("{name} should take it.",)),
    "q_end": (("So which week does it end now?",), ("And the new finish week?",)),
}
