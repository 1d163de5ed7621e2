"""``plan``: the agent's first reply is a plan, which stays in its context and may be revised.

The first user message (the observation, with the instruction where it goes) ends with
:attr:`PlanConfig.prompt`; the reply is a turn of kind ``plan``: not parsed, not sent to the
env, answered with :attr:`PlanConfig.act_prompt`, and then the episode goes on as usual. The
plan is generated, so it is trained with the episode like any reply (loss mask 1). With
``agent.history_window`` the latest plan turn stays in the model's prompt however far back it
lies. With ``revise_every: N`` the observation after every N-th action asks for a revised plan
(a new ``plan`` turn, which then is the one kept in context).
"""
from __future__ import annotations

from dataclasses import dataclass

from agentgym_core import ACTION, Strategy, Trajectory, Turn, check_range

PLAN = "plan"


@dataclass
class PlanConfig:
    #: Appended to the first user message: asks for the plan.
    prompt: str = ("Before you act, write a short numbered plan of the steps that solve this task. "
                   "Do not give an action yet.")
    #: The user's answer to a plan: asks for the next action.
    act_prompt: str = "Now follow your plan: give your next action."
    #: The most new tokens of a plan (actions get rollout.max_new_tokens).
    max_tokens: int = 96
    #: After every N actions, ask for a revised plan (0: the first plan is the only one).
    revise_every: int = 0
    #: Appended to the observation that asks for a revised plan.
    revise_prompt: str = ("Revise your plan for what is left to do, in light of what happened (or repeat it if it "
                          "still holds). Do not give an action yet.")

    def __post_init__(self) -> None:
        check_range("agent.strategy.max_tokens", self.max_tokens, ge=1)
        check_range("agent.strategy.revise_every", self.revise_every, ge=0, note="0: never revise")
        for key in ("prompt", "act_prompt", "revise_prompt"):
            if not str(getattr(self, key)).strip():
                raise ValueError(f"agent.strategy.{key} must be non-empty text")


class PlanStrategy(Strategy):
    """A plan before the first action, kept in context (see the module docstring)."""

    name = "plan"
    Config = PlanConfig
    keep_in_context = (PLAN,)

    def message(self, traj: Trajectory, text: str) -> tuple[str, str]:
        c = self.config
        if not traj.turns:
            return f"{text}\n\n{c.prompt}", PLAN
        actions = sum(1 for t in traj.turns if t.kind == ACTION)
        if c.revise_every and traj.turns[-1].kind == ACTION and actions % c.revise_every == 0:
            return f"{text}\n\n{c.revise_prompt}", PLAN
        return text, ACTION

    def follow_up(self, traj: Trajectory, turn: Turn) -> str:
        return self.config.act_prompt

    def reply_tokens(self, kind: str) -> int:
        return self.config.max_tokens
