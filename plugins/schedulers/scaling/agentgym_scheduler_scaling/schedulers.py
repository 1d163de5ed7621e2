"""The schedulers: each maps a training step to the maximum number of turns per episode.

``scaling_inter`` and ``linear`` are pure functions of the step, so a resumed run gets the
exact horizon an uninterrupted one would have had. ``adaptive`` depends on what it has
observed; that state is in :meth:`state_dict` and comes back through :meth:`load_state_dict`.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from agentgym_core import AgentGymError, Scheduler, config_from


class SchedulerStateError(AgentGymError):
    """A checkpoint's scheduler state does not fit the scheduler configured for the resume."""


def check_rounds(rounds: Any, key: str = "scheduler.rounds") -> list[int]:
    """Validate a list of horizons: non-empty, positive integers, strictly increasing."""
    values = list(rounds) if rounds is not None else []
    if not values:
        raise ValueError(f"{key} must be a non-empty list of turn counts, e.g. [6, 13, 20]")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{key} must hold positive integers, got {values}")
    for a, b in zip(values, values[1:]):
        if b <= a:
            raise ValueError(f"{key} must be strictly increasing, got {values} ({b} after {a})")
    return values


def _positive(value: int, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{key} must be an integer >= 1, got {value!r}")
    return value


# -- ScalingInter-RL ------------------------------------------------------------------------
@dataclass
class ScalingInterConfig:
    #: The horizon of each stage, in order (the paper: 6, 13, 20 ... turns).
    rounds: list[int] = field(default_factory=lambda: [6, 13, 20])
    #: Training steps per stage; the last stage lasts until the end of training.
    step_interval: int = 100

    def __post_init__(self) -> None:
        self.rounds = check_rounds(self.rounds)
        _positive(self.step_interval, "scheduler.step_interval")


class ScalingInterScheduler(Scheduler):
    """ScalingInter-RL: ``stage = min(step // step_interval, len(rounds) - 1)``.

    Steps are 0-based, so with ``rounds=[6, 13, 20], step_interval=100`` steps 0-99 use 6
    turns, 100-199 use 13 and 200 onwards use 20: step 100 is the first step of stage 1.
    """

    Config = ScalingInterConfig

    def __init__(self, **options: Any) -> None:
        self.config = config_from(self, options)
        self.rounds, self.step_interval = list(self.config.rounds), self.config.step_interval
        self.stage = 0

    def stage_at(self, step: int) -> int:
        if step < 0:
            raise ValueError(f"step must be >= 0, got {step}")
        return min(step // self.step_interval, len(self.rounds) - 1)

    def max_turns(self, step: int) -> int:
        """Pure: asking about any step (e.g. the last, to size buffers) changes nothing."""
        return self.rounds[self.stage_at(step)]

    def observe(self, step: int, metrics: dict[str, float]) -> None:
        """Record the stage of the step that just finished (kept in checkpoints for the record)."""
        self.stage = self.stage_at(step)

    def state_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "rounds": list(self.rounds), "step_interval": self.step_interval}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        saved = (list(state.get("rounds", self.rounds)), state.get("step_interval", self.step_interval))
        if saved != (self.rounds, self.step_interval):
            raise SchedulerStateError(
                f"the checkpoint was made with scheduler rounds={saved[0]}, step_interval={saved[1]} "
                f"but the config now says rounds={self.rounds}, step_interval={self.step_interval}; "
                "resume with the checkpoint's scheduler settings or start a new run"
            )
        self.stage = int(state.get("stage", 0))


# -- linear ramp ----------------------------------------------------------------------------
@dataclass
class LinearConfig:
    #: Horizon at step 0.
    start: int = 4
    #: Horizon from step ``steps`` on.
    end: int = 20
    #: Steps the ramp takes.
    steps: int = 1000

    def __post_init__(self) -> None:
        _positive(self.start, "scheduler.start")
        _positive(self.end, "scheduler.end")
        _positive(self.steps, "scheduler.steps")


class LinearScheduler(Scheduler):
    """``start + (end - start) * min(step, steps) // steps``: integer arithmetic, exact at both ends.

    The horizon reaches ``end`` exactly at step ``steps`` and stays there; in between it is
    rounded toward minus infinity (so a ramp down also ends exactly on ``end``).
    """

    Config = LinearConfig

    def __init__(self, **options: Any) -> None:
        self.config = cfg = config_from(self, options)
        self.start, self.end, self.steps = cfg.start, cfg.end, cfg.steps

    def max_turns(self, step: int) -> int:
        if step < 0:
            raise ValueError(f"step must be >= 0, got {step}")
        return self.start + (self.end - self.start) * min(step, self.steps) // self.steps

    def state_dict(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "steps": self.steps}


# -- adaptive curriculum --------------------------------------------------------------------
@dataclass
class AdaptiveConfig:
    #: The horizon of each stage, in order.
    rounds: list[int] = field(default_factory=lambda: [6, 13, 20])
    #: Number of most recent steps whose success rate is averaged.
    window: int = 10
    #: Move to the next stage when the window's mean success rate is >= this.
    threshold: float = 0.5
    #: The metric (from the trainer's per-step metrics) that is averaged.
    metric: str = "success_rate"

    def __post_init__(self) -> None:
        self.rounds = check_rounds(self.rounds)
        _positive(self.window, "scheduler.window")
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"scheduler.threshold must be in [0, 1], got {self.threshold}")


class AdaptiveScheduler(Scheduler):
    """Raise the horizon when the agent is good enough at the current one.

    After each step, :meth:`observe` appends ``metrics[metric]`` to a window of the last
    ``window`` steps. When the window is full and its mean is ``>= threshold``, the stage
    moves to the next round and the window is emptied, so every stage lasts at least
    ``window`` steps and is judged only on episodes run at its own horizon. The stage and
    the window are the state saved in checkpoints.
    """

    Config = AdaptiveConfig

    def __init__(self, **options: Any) -> None:
        self.config = cfg = config_from(self, options)
        self.rounds, self.window, self.threshold, self.metric = cfg.rounds, cfg.window, cfg.threshold, cfg.metric
        self.stage = 0
        self.recent: deque[float] = deque(maxlen=self.window)
        #: ``[step, new_stage]`` for each raise, for logs and plots.
        self.changes: list[list[int]] = []

    def max_turns(self, step: int) -> int:
        return self.rounds[self.stage]

    def observe(self, step: int, metrics: dict[str, float]) -> None:
        if self.metric not in metrics:
            raise AgentGymError(
                f"adaptive scheduler: step {step} metrics have no {self.metric!r} "
                f"(got: {', '.join(sorted(metrics)) or 'none'}); set scheduler.metric to one of them"
            )
        self.recent.append(float(metrics[self.metric]))
        if self.stage + 1 < len(self.rounds) and len(self.recent) == self.window:
            if sum(self.recent) / self.window >= self.threshold:
                self.stage += 1
                self.recent.clear()
                self.changes.append([step, self.stage])

    def state_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "recent": list(self.recent), "changes": [list(c) for c in self.changes],
                "rounds": list(self.rounds)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        stage = int(state.get("stage", 0))
        if not 0 <= stage < len(self.rounds):
            raise SchedulerStateError(
                f"the checkpoint's adaptive scheduler is at stage {stage}, but scheduler.rounds "
                f"{self.rounds} has only {len(self.rounds)} stages; resume with the checkpoint's rounds"
            )
        self.stage = stage
        self.recent = deque((float(x) for x in state.get("recent", [])), maxlen=self.window)
        self.changes = [list(c) for c in state.get("changes", [])]
