"""The parts of a run, assembled in one place from a config and the plugin manager.

``agentgym train``, ``eval``, ``rollout``, ``LLMAgent`` and the trainer's own evaluations all
play episodes with the same parts: an engine, an env pool, the env's typed description
(:class:`~agentgym_core.env.spec.EnvSpec`: task ids per split, categories), the agent's
settings and strategy (``agent.strategy``), the scheduler and the rewards. :func:`assemble` builds them, in that order of
cost (the model loads last, after the env has been checked); :class:`RunParts` holds them
and is what :func:`~agentgym_core.rollout.runner.rollout` and
:func:`~agentgym_core.evaluation.evaluate` take.

    parts = await assemble(cfg, manager, local=True)   # env pool, env spec, scheduler, rewards
    parts.load_engine(cfg.model.path)                  # or the trainer's live model
    trajectories = await rollout(parts, [(task_id, 0)], max_turns=6)
    await parts.aclose()
"""
from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import build_component
from .config_schema import SECTIONS, AgentSection, ModelSection, RolloutSection
from .env.base import BaseEnv
from .env.launcher import open_env_pool
from .env.pool import LocalEnvPool
from .env.spec import EnvSpec
from .errors import AgentGymError, ConfigError
from .rollout.actions import check_format
from .rollout.context import ContextPolicy, window_or_full
from .rollout.strategy import Strategy


@dataclass(frozen=True)
class AgentSettings:
    """How the agent plays an episode: prompt layout, action format, sampling and token budgets.

    Built from the config's ``agent``, ``rollout``, ``model`` and ``run`` sections
    (:meth:`from_config`, through :data:`AGENT_SETTING_SOURCES`); each default is read from
    the section that declares it, never restated. Two differ on purpose when built directly:
    ``max_context`` and ``seed`` are None (no cap, not reproducible) until a config sets them.
    """

    #: Extra system prompt before the env's instruction.
    system_prompt: str | None = AgentSection.system_prompt
    #: Action format override (None: the env's own).
    action_format: str | None = AgentSection.action_format
    #: ``system``, ``before_observation`` or ``after_observation``.
    instruction_position: str = AgentSection.instruction_position
    temperature: float = RolloutSection.temperature
    top_p: float = RolloutSection.top_p
    max_new_tokens: int = RolloutSection.max_new_tokens
    #: Tokens the stored episode may reach in all (prompt and every turn).
    max_episode_tokens: int = RolloutSection.max_episode_tokens
    #: Tokens the model may generate over an episode (0: no budget).
    max_generated_tokens: int = RolloutSection.max_generated_tokens
    #: The model's context: prompt shown (what :attr:`RunParts.context` shows) plus reply; an
    #: episode ends (``context``) when the next one would not fit (None: no cap).
    max_context: int | None = None
    chat_template: str | None = ModelSection.chat_template
    #: Episodes in flight at once.
    concurrency: int = RolloutSection.concurrency
    lockstep: bool = RolloutSection.lockstep
    #: Base seed of sampling (each episode and turn derives its own); None: not reproducible.
    seed: int | None = None

    @classmethod
    def from_config(cls, cfg: Any) -> "AgentSettings":
        values = {}
        for name, (section, key) in AGENT_SETTING_SOURCES.items():
            value = cfg[section][key]
            kind = type(getattr(SECTIONS[section].dataclass, key))
            values[name] = kind(value) if kind in (bool, int, float) and value is not None else value
        return cls(**values)

    def replace(self, **changes: Any) -> "AgentSettings":
        return dataclasses.replace(self, **changes)


#: Where each :class:`AgentSettings` field comes from in a run config: ``(section, key)``.
AGENT_SETTING_SOURCES: dict[str, tuple[str, str]] = {
    **{f: ("agent", f) for f in ("system_prompt", "action_format", "instruction_position")},
    **{f: ("rollout", f) for f in ("temperature", "top_p", "max_new_tokens", "max_episode_tokens",
                                   "max_generated_tokens", "concurrency", "lockstep")},
    "max_context": ("model", "max_context"),
    "chat_template": ("model", "chat_template"),
    "seed": ("run", "seed"),
}


@dataclass
class RunParts:
    """Everything episodes are played with; see the module docstring."""

    pool: Any
    env: EnvSpec
    agent: AgentSettings = field(default_factory=AgentSettings)
    #: How the episodes of a task are played (:mod:`agentgym_core.rollout.strategy`; default: one
    #: episode per task, every reply an action).
    strategy: Any = field(default_factory=lambda: default_strategy())
    #: What the model sees of an episode for each reply (:mod:`agentgym_core.rollout.context`): resolved
    #: here once, from ``agent.context`` or the window ``agent.history_window`` stands for (:func:`context_policy`).
    context: Any = field(default_factory=ContextPolicy)
    engine: Any = None
    #: The scheduler: ``max_turns(step)`` during training; :attr:`final_max_turns` after it.
    scheduler: Any = None
    #: ``(reward component, weight)`` pairs, summed per turn by :meth:`score`.
    rewards: list[tuple[Any, float]] = field(default_factory=list)
    config: Any = None
    manager: Any = None
    #: Close the engine in :meth:`aclose` (False: the caller owns it, e.g. ``LLMAgent``).
    owns_engine: bool = True

    @property
    def action_format(self) -> str:
        """The format replies are parsed in: ``agent.action_format`` if set, else the env's own."""
        return check_format(self.agent.action_format or self.env.action_format)

    @property
    def final_max_turns(self) -> int:
        """The turns an episode may take once training has ended: what evaluations, demonstrations and
        ``LLMAgent.infer`` play at (:func:`final_max_turns` of :attr:`scheduler`, in its current state)."""
        if self.scheduler is None:
            raise ConfigError("RunParts.final_max_turns needs a scheduler (assemble() builds the config's)")
        return final_max_turns(self.scheduler)

    def load_engine(self, model: Any, tokenizer: Any = None, *, device: str | None = None, **options: Any) -> Any:
        """Build the configured engine on *model*: a path or alias (its own copy of the weights), or
        a live ``nn.Module`` with its *tokenizer* (the trainer's policy). Every engine gets the
        ``model`` section's ``dtype``, ``chat_template`` and ``max_context``; *options* override the
        ``engine`` section's. *device* is where the trainer wants the engine's copy: passed as the
        ``device`` option to an engine whose :attr:`~agentgym_core.Engine.placement` is ``"option"``,
        not to one that places itself."""
        if self.config is None or self.manager is None:
            raise ConfigError("RunParts.load_engine needs parts made by assemble() (a config and a plugin manager)")
        engine_cls = self.manager.registry("engines").load(self.config.engine.name) if device is not None else None
        if engine_cls is not None and getattr(engine_cls, "placement", "option") == "option":
            options["device"] = device
        section = self.config.model
        runtime = dict(dtype=section.dtype, chat_template=section.chat_template, max_context=int(section.max_context))
        if isinstance(model, str) or hasattr(model, "__fspath__"):
            model = str(model)
        else:
            runtime["tokenizer"] = tokenizer
        self.engine = build_component(self.manager, "engines", self.config.engine, model, **runtime, **options)
        return self.engine

    def score(self, trajectories: Sequence[Any]) -> None:
        """Fill each trajectory's per-turn ``rewards``: the weighted sum of the reward components.

        A component with a ``score_batch(trajectories)`` method (:class:`~agentgym_core.components.Reward`)
        is first handed the whole step's episodes at once, so it can batch its work (a model judge's calls)
        or compare a group's episodes (group-relative judging); each episode is then scored one at a time."""
        trajectories = list(trajectories)
        for fn, _ in self.rewards:
            batch = getattr(fn, "score_batch", None)
            if callable(batch) and trajectories:
                batch(trajectories)
        for t in trajectories:
            total = [0.0] * len(t.turns)
            for fn, weight in self.rewards:
                for i, r in enumerate(fn(t)):
                    total[i] += weight * float(r)
            t.rewards = total

    async def aclose(self) -> None:
        """Close the env pool (stopping launched servers), the rewards (:func:`close_rewards`) and, if owned,
        the engine."""
        try:
            if self.pool is not None:
                await self.pool.aclose()
        finally:
            try:
                close_rewards(self.rewards)
            finally:
                if self.engine is not None and self.owns_engine:
                    self.engine.close()


def close_rewards(rewards: Sequence[tuple[Any, float]]) -> None:
    """Call ``close()`` on each reward component that has one (a model judge: its connections, its event loop
    thread, a local judge model), every one even if one fails; the first failure is raised after."""
    failure: BaseException | None = None
    for fn, _ in rewards:
        close = getattr(fn, "close", None)
        if callable(close):
            try:
                close()
            except BaseException as exc:  # noqa: BLE001 - the others are closed first
                failure = failure or exc
    if failure is not None:
        raise failure


async def assemble(cfg: Any, manager: Any = None, *, local: bool = False, model: Any = None,
                   tokenizer: Any = None) -> RunParts:
    """The parts of the run *cfg* describes (a validated run config).

    Opens the env pool (``local``: envs in this process; else ``env.urls`` or freshly launched
    servers), reads the env's description, builds the scheduler and rewards, and, when *model*
    is given, the engine (see :meth:`RunParts.load_engine`). On any failure what was opened is
    closed again.
    """
    if manager is None:
        from .plugins import get_plugin_manager  # light start-up: pluggy loads when a run is assembled

        manager = get_plugin_manager()
    if "env" not in cfg:
        raise ConfigError("the run config has no 'env' section: say which env to use (env: {name: babyai})")
    pool = open_env_pool(cfg.env, manager, local=local)
    parts = RunParts(pool=pool, env=None, config=cfg, manager=manager)  # type: ignore[arg-type]
    try:
        parts.env = await pool.spec(cfg.env.name)
        parts.agent = AgentSettings.from_config(cfg)
        parts.strategy = build_component(manager, "strategies", cfg.agent.strategy)
        parts.context = context_policy(cfg, manager)
        parts.scheduler = build_component(manager, "schedulers", cfg.scheduler)
        parts.rewards = [(build_component(manager, "rewards", r), float(r.weight)) for r in cfg.rewards]
        if model is not None:
            parts.load_engine(model, tokenizer)
    except BaseException:
        await parts.aclose()
        raise
    return parts


def local_parts(engine: Any, env: Any, *, name: str | None = None, agent: AgentSettings | None = None,
                instruction: str | None = None, owns_engine: bool = False, strategy: Any = None,
                context: Any = None, history_window: int = 0, scheduler: Any = None, **settings: Any) -> RunParts:
    """Parts for playing a ``BaseEnv`` subclass, factory or instance in this process with *engine*,
    without a run config (``LLMAgent.infer``, tests, benchmarks). *settings* are
    :class:`AgentSettings` fields; *instruction* replaces the env's; *strategy* is a built
    strategy (None: the default); *context* a built context policy, or *history_window* the last
    K turns (neither: the whole episode); *scheduler* a built scheduler (for :attr:`RunParts.final_max_turns`)."""
    if context is not None and history_window:
        raise ConfigError("local_parts: give context or history_window, not both")
    if isinstance(env, BaseEnv):
        instance = env
        factory = functools.partial(_Borrowed, instance)
        label = name or type(instance).__name__
    else:
        factory = env
        instance = None
        label = name or getattr(env, "__name__", None) or getattr(getattr(env, "func", None), "__name__", "env")
    pool = LocalEnvPool(factory, name=label)
    probe = instance if instance is not None else pool.describer()
    spec = EnvSpec.from_env(probe, name=label)
    if instruction is not None:
        spec = dataclasses.replace(spec, instruction=instruction)
    settings_obj = (agent or AgentSettings()).replace(**settings) if settings else (agent or AgentSettings())
    return RunParts(pool=pool, env=spec, agent=settings_obj, strategy=strategy or default_strategy(), engine=engine,
                    owns_engine=owns_engine, context=context or window_or_full(int(history_window)),
                    scheduler=scheduler)


def context_policy(cfg: Any, manager: Any) -> Any:
    """The context policy of *cfg*: ``agent.context``, or the window ``agent.history_window: K`` stands for."""
    section, window = cfg.agent.context, int(cfg.agent.history_window)
    if window > 0:
        if section.name != "full":
            raise ConfigError(
                f"agent.history_window ({window}) and agent.context ({section.name}) both say what the model sees: "
                f"give one (agent.history_window: {window} is agent.context: {{name: window, turns: {window}}})")
        return window_or_full(window)
    return build_component(manager, "contexts", section)


#: The step a scheduler is asked about for the turns training ends at (any step past the last stage).
FINAL_STEP = 10**9


def final_max_turns(scheduler: Any) -> int:
    """The turns *scheduler* gives once training has ended: ``max_turns(FINAL_STEP)``.

    For step-based schedulers (``scaling_inter``, ``linear``, ``fixed``) that is their last stage; a
    stateful one (``adaptive``) answers from the state it is in (:func:`checkpoint_scheduler`).
    """
    try:
        return int(scheduler.max_turns(FINAL_STEP))
    except AgentGymError:
        raise
    except Exception as exc:
        raise AgentGymError(
            f"cannot get the final max_turns from scheduler {type(scheduler).__name__} ({exc}); pass --max-turns"
        ) from exc


def checkpoint_scheduler(cfg: Any, manager: Any, checkpoint: Any = None) -> Any:
    """The config's scheduler, in the state saved with *checkpoint* (a model folder) when it holds one.

    A stateful scheduler (``adaptive``) then gives the max_turns the run had reached, the one the
    trainer's ``eval/after.json`` used; a scheduler the config has changed since keeps its fresh state.
    """
    scheduler = build_component(manager, "schedulers", cfg.scheduler)
    state_file = Path(checkpoint) / "trainer_state.json" if checkpoint is not None else None
    if state_file is not None and state_file.is_file():
        try:
            state = json.loads(state_file.read_text(encoding="utf-8")).get("scheduler")
            if state:
                scheduler.load_state_dict(state)
        except Exception:  # noqa: BLE001 - another scheduler than the checkpoint's: its own state
            pass
    return scheduler


def default_strategy() -> Any:
    """The ``default`` strategy: one episode per task, every reply an action."""
    return Strategy()


class _Borrowed:
    """Lends a caller's env instance to episodes without closing it (its owner does)."""

    def __init__(self, env: Any) -> None:
        self._env = env

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)

    def close(self) -> None:
        pass
