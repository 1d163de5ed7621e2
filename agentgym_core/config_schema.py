"""The config sections core owns, as dataclasses (the component sections add their own fields).

A run config has these top-level sections. ``env``, ``engine``, ``scheduler``, ``backend``,
``trainer`` and each item of ``rewards`` select a registered component by ``name``; their
other keys are the component's ``Config`` fields, next to the *core keys* below that core
itself reads (``name``; for env, e.g. how many env servers to launch). ``agent.strategy``
selects one inside the ``agent`` section the same way.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Optional

from .catalogue import DEFAULT_COMPONENTS
from .rollout.actions import FORMATS as ACTION_FORMATS


def check_range(
    key: str,
    value: float,
    *,
    ge: Optional[float] = None,
    gt: Optional[float] = None,
    le: Optional[float] = None,
    lt: Optional[float] = None,
    note: str = "",
) -> None:
    """Raise ``ValueError("<key> must be >= 0 (<note>), got -5")`` unless *value* is within the bounds.

    Component configs use it in ``__post_init__`` so every size and ratio is checked before a
    run starts. NaN fails every bound.
    """
    if (
        (ge is None or value >= ge) and (gt is None or value > gt)
        and (le is None or value <= le) and (lt is None or value < lt)
    ):
        return
    low = f"[{ge:g}" if ge is not None else f"({gt:g}" if gt is not None else None
    high = f"{le:g}]" if le is not None else f"{lt:g})" if lt is not None else None
    if low and high:
        want = f"in {low}, {high}"
    elif low:
        want = f">= {ge:g}" if ge is not None else f"> {gt:g}"
    else:
        want = f"<= {le:g}" if le is not None else f"< {lt:g}"
    raise ValueError(f"{key} must be {want}{f' ({note})' if note else ''}, got {value}")


@dataclass
class RunSection:
    name: str = "run"
    output_dir: str = "runs"
    seed: int = 0
    #: Replace an earlier run in ``output_dir/name`` (its files are deleted first). False: a
    #: new run refuses to start there; ``agentgym train --resume DIR`` continues it instead.
    overwrite: bool = False

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name:
            raise ValueError(f"run.name must be a non-empty folder name, got {self.name!r}")


@dataclass
class ModelSection:
    #: A local Hugging Face model folder, or a bundled alias (``smollm2-135m-instruct``).
    path: str = "smollm2-135m-instruct"
    #: ``auto`` (bf16 where the backend supports it, else fp32), ``bf16``, ``fp16``, ``fp32``.
    dtype: str = "auto"
    #: A Jinja chat template that replaces the tokenizer's own (None: use the model's).
    chat_template: Optional[str] = None
    #: The model's context: the longest prompt the model attends to for a reply (what the context policy,
    #: ``agent.context``, shows of the episode) plus that reply. With the full history that is the whole
    #: episode so far; with a window it is much less. The stored episode has its own bounds (``rollout``).
    max_context: int = 2048

    def __post_init__(self) -> None:
        if self.dtype not in ("auto", "bf16", "fp16", "fp32"):
            raise ValueError(f"model.dtype must be auto, bf16, fp16 or fp32, got {self.dtype!r}")
        check_range("model.max_context", self.max_context, ge=16)


@dataclass
class AgentSection:
    #: Extra system prompt put before the env's instruction (None: only the instruction).
    system_prompt: Optional[str] = None
    #: Action format override (``react``, ``tags``, ``free``); None: the env's own.
    action_format: Optional[str] = None
    #: Keep only the last K turns in the prompt (0: keep all): shorthand for
    #: ``agent.context: {name: window, turns: K}``; give one or the other.
    history_window: int = 0
    #: Where the env's instruction goes: ``system`` (the system message),
    #: ``before_observation`` or ``after_observation`` (inside the first user message, which
    #: small models such as SmolLM2-135M follow better than a system message).
    instruction_position: str = "system"
    #: How the episodes of a task are played: a registered strategy (``default``, ``plan``,
    #: ``reflect``, ...; ``agentgym list strategies``), as ``agent.strategy: reflect`` or with options
    #: ``agent.strategy: {name: reflect, attempts: 3}``; validated like a component section.
    strategy: Any = None
    #: What the model sees of the episode for each reply: a registered context policy (``full``, the
    #: default; ``window``; ``agentgym list contexts``), e.g. ``agent.context: {name: window, turns: 2,
    #: chunked: true}``. The update scores every reply under the context it was sampled from.
    context: Any = None

    def __post_init__(self) -> None:
        if self.action_format and self.action_format not in ACTION_FORMATS:
            raise ValueError(
                f"agent.action_format must be {', '.join(ACTION_FORMATS[:-1])} or {ACTION_FORMATS[-1]} "
                f"(or null: the env's own), got {self.action_format!r}"
            )
        check_range("agent.history_window", self.history_window, ge=0, note="0: keep all turns")
        if self.instruction_position not in ("system", "before_observation", "after_observation"):
            raise ValueError(
                "agent.instruction_position must be system, before_observation or after_observation, "
                f"got {self.instruction_position!r}"
            )


@dataclass
class RolloutSection:
    #: Distinct tasks per training step.
    tasks_per_step: int = 4
    #: Episodes per task (GRPO/RLOO groups); episodes per step = tasks_per_step * group_size.
    group_size: int = 4
    #: At most this many episodes in flight at once.
    concurrency: int = 16
    max_new_tokens: int = 64
    temperature: float = 1.0
    top_p: float = 1.0
    #: Budget of tokens of the stored episode (prompt + all turns, whatever the model was shown of it);
    #: the episode ends (``max_tokens``) when reached.
    max_episode_tokens: int = 2048
    #: Budget of tokens the model may generate over one episode, all replies together (0: no budget); the
    #: episode ends (``max_generated``) when reached.
    max_generated_tokens: int = 0
    #: Write every step's trajectories as JSONL into the run directory.
    dump_trajectories: bool = True
    #: Send the engine a batch only when every episode in flight has asked for its next reply
    #: (sorted by episode): batches stop depending on env timing, so a seeded run samples the
    #: same tokens every time. Costs the overlap of env steps with generation.
    lockstep: bool = False

    def __post_init__(self) -> None:
        for key in ("tasks_per_step", "group_size", "concurrency", "max_new_tokens", "max_episode_tokens"):
            check_range(f"rollout.{key}", getattr(self, key), ge=1)
        check_range("rollout.max_generated_tokens", self.max_generated_tokens, ge=0, note="0: no budget")
        check_range("rollout.temperature", self.temperature, ge=0, note="0: greedy")
        check_range("rollout.top_p", self.top_p, gt=0, le=1)


@dataclass
class EvalSection:
    split: str = "test"
    #: Number of test tasks (0: the whole split).
    tasks: int = 32
    #: Samples per task (Avg@k, Pass@k).
    k: int = 1
    temperature: float = 0.0
    #: Evaluate before and after training.
    before: bool = True
    after: bool = True
    #: The repeat guard: a reply whose action the episode already took in answer to the same message (greedy
    #: decoding going round a loop: "turn left" forever) is sampled again at ``repeat_temperature``, at most this
    #: many times a reply. 0: off (replies as decoded).
    repeat_guard: int = 0
    repeat_temperature: float = 1.0

    def __post_init__(self) -> None:
        check_range("eval.tasks", self.tasks, ge=0, note="0: the whole split")
        check_range("eval.k", self.k, ge=1)
        check_range("eval.temperature", self.temperature, ge=0, note="0: greedy")
        check_range("eval.repeat_guard", self.repeat_guard, ge=0, note="0: off")
        check_range("eval.repeat_temperature", self.repeat_temperature, gt=0)


# -- the core keys of the sections that select a component ---------------------------------
@dataclass
class EnvCoreKeys:
    """The keys of the ``env`` section core reads (the rest are the env's own options)."""

    name: str = "???"
    #: Server processes to launch for this env (ignored when ``urls`` is set).
    servers: int = 1
    #: Remote env servers to use instead of launching local ones.
    urls: list[str] = field(default_factory=list)
    #: Bearer token for the servers (launched ones get it too). Prefer the AGENTGYM_ENV_TOKEN
    #: env var: run directories store this key as <redacted>.
    token: Optional[str] = None
    #: Seconds one env call may take before it is retried / fails.
    timeout: float = 60.0
    #: Seconds a dead server may stay unreachable before its episodes fail.
    unavailable_after: float = 30.0
    #: Maximum concurrent sessions per server.
    max_sessions: int = 1024
    #: Seconds an idle session lives on a launched server before it is closed (0: forever).
    ttl: float = 600.0
    #: Seconds added to every reset and step answer (mean), as a remote env's would take: timing only,
    #: the envs' answers are the same (:mod:`agentgym_core.env.latency`). 0: as fast as the env is.
    latency_s: float = 0.0
    #: Shape of the added delay: 0 every answer takes ``latency_s``; else log-normal with that mean.
    latency_sigma: float = 0.0

    def __post_init__(self) -> None:
        check_range("env.servers", self.servers, ge=1)
        check_range("env.latency_s", self.latency_s, ge=0, note="seconds; 0: none added")
        check_range("env.latency_sigma", self.latency_sigma, ge=0, note="0: every answer takes env.latency_s")
        check_range("env.timeout", self.timeout, gt=0, note="seconds")
        check_range("env.unavailable_after", self.unavailable_after, gt=0, note="seconds")
        check_range("env.max_sessions", self.max_sessions, ge=1, note="sessions per server")
        check_range("env.ttl", self.ttl, ge=0, note="seconds; 0: sessions never expire")


@dataclass
class ComponentCoreKeys:
    """``name``: the one key core reads in ``engine``, ``scheduler``, ``backend`` and ``trainer``."""

    name: str = "???"


@dataclass
class RewardCoreKeys:
    """``name`` and ``weight`` of one item of the ``rewards`` list."""

    name: str = "???"
    weight: float = 1.0

    def __post_init__(self) -> None:
        if not math.isfinite(self.weight):
            raise ValueError(f"the reward's weight must be a finite number, got {self.weight}")


@dataclass
class SectionSpec:
    """How one top-level section is validated."""

    dataclass: type
    kind: Optional[str] = None  # registry kind when the section selects a component
    default_name: Optional[str] = None
    is_list: bool = False
    #: Keys of this section that select a component themselves (``agent.strategy``).
    nested: dict[str, "SectionSpec"] = field(default_factory=dict)


SECTIONS: dict[str, SectionSpec] = {
    "run": SectionSpec(RunSection),
    "model": SectionSpec(ModelSection),
    "agent": SectionSpec(AgentSection, nested={
        "strategy": SectionSpec(ComponentCoreKeys, kind="strategies", default_name="default"),
        "context": SectionSpec(ComponentCoreKeys, kind="contexts", default_name="full")}),
    "rollout": SectionSpec(RolloutSection),
    "eval": SectionSpec(EvalSection),
    "env": SectionSpec(EnvCoreKeys, kind="envs"),
    "engine": SectionSpec(ComponentCoreKeys, kind="engines", default_name=DEFAULT_COMPONENTS["engine"]),
    "scheduler": SectionSpec(ComponentCoreKeys, kind="schedulers", default_name="fixed"),
    "backend": SectionSpec(ComponentCoreKeys, kind="backends", default_name="auto"),
    "trainer": SectionSpec(ComponentCoreKeys, kind="trainers", default_name=DEFAULT_COMPONENTS["trainer"]),
    "rewards": SectionSpec(RewardCoreKeys, kind="rewards", is_list=True),
}

DEFAULT_REWARDS: list[dict[str, Any]] = [{"name": "success", "weight": 1.0}]

#: Config keys that hold secrets: written as REDACTED to run directories and printouts.
SECRET_KEYS = (("env", "token"),)
REDACTED = "<redacted>"

#: The key of a pipeline's stages: a list of ``{name: <folder>, <section>: {...}, ...}``, each stage's
#: sections merged onto the rest of the file (:mod:`agentgym_core.pipeline`).
STAGES = "stages"


def schema_default(key: str) -> Any:
    """The default of config key *key* as this module declares it: ``"rollout.temperature"`` a
    section field's, ``"engine.name"`` / ``"agent.strategy.name"`` the component a section selects
    when none is named. What other places that offer these options (``LLMAgent``,
    ``AgentSettings``) read instead of restating them."""
    section, _, rest = key.partition(".")
    spec = SECTIONS[section]
    head, _, tail = rest.partition(".")
    if tail == "name" and head in spec.nested:
        spec, rest = spec.nested[head], tail
    if rest == "name" and spec.kind is not None:
        return spec.default_name
    fields = {f.name: f for f in dataclasses.fields(spec.dataclass)}
    if rest not in fields:
        raise KeyError(f"config key {key!r} has no declared default")
    f = fields[rest]
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default

