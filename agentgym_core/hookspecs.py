"""Every hook AgentGym calls. Plugins implement them with ``@agentgym_core.hookimpl``.

Registration hooks receive a typed :class:`~agentgym_core.registry.Registry` and call
``registry.add(name, "pkg.module:Class")``. Lifecycle hooks fire during a training run so
that loggers and callbacks can observe it; they return nothing and must not mutate their
arguments. Hooks are called by keyword: an implementation may accept a subset of the
arguments. Full reference with examples: ``docs/plugin_hooks.md``.
"""
from __future__ import annotations

from typing import Any

import pluggy

PROJECT = "agentgym"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# -- registration: one hook per kind of plugin (agentgym_core.kinds) ------------------------
@hookspec
def register_envs(registry: Any) -> None:
    """Register environments (:class:`~agentgym_core.BaseEnv` subclasses).

    :param registry: the envs :class:`~agentgym_core.registry.Registry`; call
        ``registry.add("name", "pkg.module:EnvClass")``.
    Fires once when the plugin manager is built, before any command runs. Returns nothing.
    """


@hookspec
def register_rewards(registry: Any) -> None:
    """Register reward functions (:class:`~agentgym_core.Reward` subclasses).

    :param registry: the rewards registry; ``registry.add("name", "pkg.module:RewardClass")``.
    Fires once when the plugin manager is built. Returns nothing.
    """


@hookspec
def register_schedulers(registry: Any) -> None:
    """Register round schedulers, which give the maximum number of turns at each step.

    :param registry: the schedulers registry; ``registry.add("name", "pkg.module:SchedulerClass")``
        where the class subclasses :class:`~agentgym_core.Scheduler`.
    Fires once when the plugin manager is built. Returns nothing.
    """


@hookspec
def register_backends(registry: Any) -> None:
    """Register device backends (cpu, cuda, npu, ...).

    :param registry: the backends registry; ``registry.add("name", "pkg.module:BackendClass")``
        where the class subclasses :class:`~agentgym_core.Backend`.
    Fires once when the plugin manager is built. Returns nothing.
    """


@hookspec
def register_trainers(registry: Any) -> None:
    """Register trainers: the loop rollout -> rewards -> advantages -> update -> checkpoint.

    :param registry: the trainers registry; ``registry.add("name", "pkg.module:TrainerClass")``
        where the class subclasses :class:`~agentgym_core.Trainer`.
    Fires once when the plugin manager is built. Returns nothing.
    """


@hookspec
def register_engines(registry: Any) -> None:
    """Register rollout engines, which turn token ids into sampled tokens and logprobs.

    :param registry: the engines registry; ``registry.add("name", "pkg.module:EngineClass")``
        where the class subclasses :class:`~agentgym_core.Engine`.
    Fires once when the plugin manager is built. Returns nothing.
    """


@hookspec
def register_strategies(registry: Any) -> None:
    """Register agent strategies: how the episodes of one task are played (plan first, reflect and
    try again, ...).

    :param registry: the strategies registry; ``registry.add("name", "pkg.module:StrategyClass")``
        where the class subclasses :class:`~agentgym_core.Strategy`. Core's
        ``default`` (one episode per task, every reply an action) comes through this hook too.
    Fires once when the plugin manager is built. Returns nothing. Selected by ``agent.strategy``.
    """


@hookspec
def register_context_policies(registry: Any) -> None:
    """Register context policies: what the model sees of an episode for each reply.

    :param registry: the contexts registry; ``registry.add("name", "pkg.module:PolicyClass")`` where
        the class subclasses :class:`~agentgym_core.ContextPolicy` and returns, from
        ``spans(view)``, the spans of the episode's tokens the model's prompt is made of. Core's
        ``full`` and ``window`` come through this hook too.
    Fires once when the plugin manager is built. Returns nothing. Selected by ``agent.context``;
    the update scores every reply under the spans it was sampled from.
    """


@hookspec
def register_commands(registry: Any) -> None:
    """Register ``agentgym`` CLI commands (simonw/llm's ``register_commands``, as import strings).

    :param registry: the commands registry; call ``registry.add("view", "pkg.cli:view",
        description="one line for --help")`` where the target is a ``click.Command``. Core's own
        commands (``train``, ``eval``, ...) come through this hook too; the command module is
        imported only when the command runs (or ``agentgym NAME --help`` is asked for).
    Fires once when the plugin manager is built. Returns nothing.
    """


@hookspec
def register_experts(registry: Any) -> None:
    """Register experts: scripted policies that play an env (the upper bound of an evaluation table,
    and the demonstrations of ``agentgym demos`` for a warm start).

    :param registry: the experts registry; ``registry.add("<env>.<name>", "pkg.module:expert")`` where
        the target is a generator function ``expert(env, observation)`` that yields actions (as the
        agent writes them for the env) and receives each step's observation; see
        :mod:`agentgym_core.experts`.
    Fires once when the plugin manager is built. Returns nothing. Used by ``agentgym eval --expert
    NAME`` and ``agentgym demos ENV --expert NAME``.
    """


@hookspec
def register_estimators(registry: Any) -> None:
    """Register advantage estimators for the ``rl`` trainer (``trainer.algorithm``), from outside it.

    :param registry: the estimators registry; ``registry.add("name", "pkg.module:function")`` where the
        function carries ``@agentgym_trainer_rl.registry.estimator("name", ...)`` (its properties: grouped,
        needs a critic, default loss aggregation) and maps ``(batch, EstimatorOptions, all_reduce)`` to
        ``(advantages [B, L], returns or None)``. The trainer's own estimators are declared the same way.
    Fires once when the plugin manager is built. Returns nothing. The module is imported when a config
    is checked: keep torch out of its module level (import it in the function).
    """


@hookspec
def register_policy_losses(registry: Any) -> None:
    """Register policy losses for the ``rl`` trainer (``trainer.policy_loss``), from outside it.

    :param registry: the policy losses registry; ``registry.add("name", "pkg.module:function")`` where the
        function carries ``@agentgym_trainer_rl.registry.policy_loss("name", ...)`` and maps
        ``(logprobs, old_logprobs, advantages, mask, clip_low, clip_high)`` to per-token
        ``(loss [B, L], clipped flags [B, L])``.
    Fires once when the plugin manager is built. Returns nothing. Imported when a config is checked.
    """


# -- lifecycle (loggers and callbacks) ----------------------------------------------------
@hookspec
def on_run_start(run_dir: str, config: Any, main: bool) -> None:
    """A training run is about to start (its before/after evaluations run inside it;
    ``agentgym eval`` alone fires no lifecycle hook).

    :param run_dir: the run directory (``runs/<name>``), already created.
    :param config: the resolved run config (an OmegaConf ``DictConfig``, read-only).
    :param main: True on the main process (the one that writes the run directory).
    Fires once per process, after components are built and before the first rollout.
    Returns nothing.
    """


@hookspec
def on_rollout_end(step: int, trajectories: list, run_dir: str) -> None:
    """A rollout for *step* finished; *trajectories* are the episodes it produced.

    :param step: the training step (0-based) the rollout belongs to.
    :param trajectories: list of :class:`~agentgym_core.Trajectory`, rewards filled in.
    :param run_dir: the run directory.
    Fires once per step on each process, before the policy update. Returns nothing.
    """


@hookspec
def on_step_end(step: int, metrics: dict, run_dir: str) -> None:
    """A training step finished (rollout and update).

    :param step: the step that just finished (0-based).
    :param metrics: flat ``{name: float}`` of this step (reward, success, kl, tokens/s, ...).
    :param run_dir: the run directory.
    Fires once per step, on the main process only. Returns nothing.
    """


@hookspec
def on_checkpoint(step: int, path: str, run_dir: str) -> None:
    """A checkpoint was written (and atomically renamed into place) at *path*.

    :param step: the step the checkpoint holds (training resumes at ``step + 1``).
    :param path: the checkpoint directory.
    :param run_dir: the run directory.
    Fires on the main process only, after the checkpoint is complete. Returns nothing.
    """


@hookspec
def on_run_end(run_dir: str, metrics: dict, status: str, main: bool) -> None:
    """A run ended.

    :param run_dir: the run directory.
    :param metrics: the final metrics (last step's, plus evaluation results if any).
    :param status: ``"completed"``, ``"interrupted"`` or ``"failed"``.
    :param main: True on the main process (the one that writes the run directory).
    Fires once per process, also when the run fails or is interrupted. Returns nothing.
    """


LIFECYCLE_HOOKS = ("on_run_start", "on_rollout_end", "on_step_end", "on_checkpoint", "on_run_end")
