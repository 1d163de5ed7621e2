"""Groups without signal: finding them, dynamic sampling (DAPO) and the warning when a step learns nothing.

A group estimator (GRPO, RLOO, REINFORCE++ with a group baseline) scores each episode against
the other episodes of its task group: when they all got the same reward, every advantage in the
group is 0 and the group trains nothing. Dynamic sampling (Yu et al. 2025, DAPO, sec. 3.2;
verl's ``filter_groups``) drops such groups and plays more tasks until the step has
``rollout.tasks_per_step`` informative groups or ``trainer.dynamic_sampling_rounds`` extra rounds
were played.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

#: Rewards closer than this count as equal.
TOLERANCE = 1e-6


def episode_key(traj: Any, credit: str) -> tuple[float, ...]:
    """What the estimator compares within a group: the episode's return (``credit: episode``) or its
    per-turn rewards (``credit: turn``, which compares returns turn by turn)."""
    rewards = [float(r) for r in traj.rewards]
    return (sum(rewards),) if credit == "episode" else tuple(rewards)


def informative_groups(trajs: Iterable[Any], credit: str = "episode") -> set[int]:
    """Group ids whose usable (not failed) episodes, at least two, differ in what the estimator compares."""
    keys: dict[int, list[tuple[float, ...]]] = defaultdict(list)
    for t in trajs:
        if not t.failed:
            keys[int(t.group_id)].append(episode_key(t, credit))
    return {g for g, ks in keys.items() if len(ks) > 1 and not _all_equal(ks)}


def _all_equal(keys: Sequence[tuple[float, ...]]) -> bool:
    first = keys[0]
    return all(len(k) == len(first) and all(abs(a - b) <= TOLERANCE for a, b in zip(k, first)) for k in keys[1:])


def keep_groups(trajs: Sequence[Any], groups: set[int], limit: int) -> list[Any]:
    """The episodes of the first *limit* groups of *groups*, in the order the groups were played."""
    order: list[int] = []
    for t in trajs:
        g = int(t.group_id)
        if g in groups and g not in order:
            order.append(g)
    chosen = set(order[:limit])
    return [t for t in trajs if int(t.group_id) in chosen]


class SignalWatch:
    """Says on stderr when a step had no group with signal, and when dynamic sampling keeps hitting its cap.

    Without it a run whose model never succeeds (a new env whose action format it never writes)
    shows loss 0 and grad norm 0, step after step, and nothing says why.
    """

    def __init__(self, algorithm: str, every: int = 10, rewards: Sequence[str] = ()) -> None:
        #: The names of the run's reward components (``rewards``), so the advice fits the run.
        self.algorithm, self.every, self.rewards = algorithm, every, tuple(rewards)
        self.silent_steps = 0  # consecutive steps without an informative group
        self.capped_steps = 0  # consecutive steps where dynamic sampling hit its cap

    def no_signal(self, step: int, trajs: Sequence[Any], groups: int, dynamic: bool) -> str | None:
        """The warning for a step whose *groups* task groups all had equal rewards (None: not due)."""
        self.silent_steps += 1
        if self.silent_steps != 1 and self.silent_steps % self.every:
            return None
        ok = [t for t in trajs if not t.failed]
        rate = sum(bool(t.success) for t in ok) / max(1, len(ok))
        streak = f" (and in each of the last {self.silent_steps} steps)" if self.silent_steps > 1 else ""
        demos = ("a warm start on expert demonstrations (from Python: agent.train(env, ..., warm_start=\"expert\"); "
                 "in a config: an sft stage with trainer.demos_expert, see configs/textcraft-sft-rl.yaml)")
        if "format" in self.rewards:  # it is there, and gave every episode of a group the same
            fixes = (f"{demos}; the format reward this run has gave each group one value (every reply parsed, or "
                     "none did), so it cannot tell episodes apart here")
        else:
            fixes = ("a format reward that varies between episodes (rewards: [{name: success}, {name: format, "
                     "weight: 0.1}]), " + demos)
        fixes = fixes if dynamic else "dynamic sampling (trainer.dynamic_sampling=true), " + fixes
        return (f"step {step + 1}: in all {groups} task groups every episode got the same reward{streak} (success "
                f"rate {100 * rate:.0f}%), so {self.algorithm}'s advantages are all 0 and the step trained nothing "
                f"(loss 0, grad norm 0). The policy only learns from groups where some episodes do better than "
                f"others. Fixes: {fixes}")

    def signal(self) -> None:
        self.silent_steps = 0

    def capped(self, step: int, rounds: int, kept: int, wanted: int, success_rate: float) -> str | None:
        """The warning for a step where dynamic sampling stopped at its cap (None: not due)."""
        self.capped_steps += 1
        if self.capped_steps != 3 and (self.capped_steps < 3 or self.capped_steps % self.every):
            return None
        return (f"step {step + 1}: dynamic sampling hit its cap (trainer.dynamic_sampling_rounds={rounds} extra "
                f"rounds) in each of the last {self.capped_steps} steps, ending with {kept} of {wanted} informative "
                f"groups (training success rate {100 * success_rate:.0f}%): most tasks are always failed or always "
                "solved, so each step pays for extra rollouts and still trains on few groups. Fixes: raise "
                "rollout.group_size (more chances of a differing episode), pick tasks nearer the model's level, or warm "
                "start on expert demonstrations (agentgym demos, trainer.name: sft)")

    def uncapped(self) -> None:
        self.capped_steps = 0
