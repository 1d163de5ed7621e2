"""AgentGym core, read from its front door: every name a plugin author or a trainer author uses.

    from agentgym_core import BaseEnv, hookimpl, config_from, ConfigError

The names below are the contract (``__all__``); the modules they live in are core's business
and may move. Each is imported on first use, so ``import agentgym_core`` stays cheap (no torch,
no pluggy) however much of it a plugin names. The seed project's ``LLMAgent`` is the ``agentgym-rl``
umbrella's (``from agentgym.agents import LLMAgent``); core names no plugin.

Three helpers share their name with a core module, so they are imported from their own
(:data:`SAME_NAME`): ``from agentgym_core.rollout import rollout`` (the async rollout;
:func:`run_rollout` here is the synchronous one), ``from agentgym_core.rollout.strategy import
conversation`` and ``from agentgym_core.profiling import profiling``. ``docs/core.md`` maps the
modules behind these names.
"""
from __future__ import annotations

__version__ = "0.1.0"

import importlib
from typing import Any

#: Public name -> the module that defines it.
_PUBLIC = {
    # -- writing a plugin: the hook marker, errors, options ------------------------------------
    "hookimpl": "hookspecs",
    "AgentGymError": "errors", "ConfigError": "errors", "PluginLoadError": "errors",
    "UnknownNameError": "errors", "UnknownOptionError": "errors", "did_you_mean": "errors",
    "config_from": "options", "check_options": "options", "refuse_unknown_options": "options",
    "check_range": "config_schema",
    # -- the base class of each kind ----------------------------------------------------------
    "BaseEnv": "env.base", "normalize_action": "env.text", "agentgym_action": "env.text",
    "Reward": "components", "Scheduler": "components", "Backend": "components",
    "BackendUnavailableError": "backend",
    "Engine": "engine", "GenerationRequest": "engine", "GenerationResult": "engine", "SamplingParams": "engine",
    "engine_settings": "engine", "check_engine": "rollout.engine_checks",
    "Strategy": "rollout.strategy", "ACTION": "rollout.strategy", "EpisodeLoop": "rollout.loop", "Task": "rollout.loop",
    "EpisodeBuilder": "rollout.episode",
    "ContextPolicy": "rollout.context", "EpisodeView": "rollout.context", "Span": "rollout.context",
    "merge_spans": "rollout.context",
    "Trainer": "trainer", "TrainerConfig": "trainer_parts", "StepResult": "trainer_parts",
    "EnvFailing": "trainer_parts", "TrainingDiverged": "trainer_parts",
    # -- episodes: what rollout produces and the update reads ---------------------------------
    "Trajectory": "rollout.trajectory", "Turn": "rollout.trajectory", "ChatFormat": "rollout.chat",
    "training_segments": "rollout.segments", "needs_segments": "rollout.segments", "turn_context": "rollout.segments",
    # -- a run: config, parts, rollout, run directory, demonstrations -------------------------
    "load_config": "config", "build_component": "config", "to_yaml": "config",
    "get_plugin_manager": "plugins",
    "RunParts": "assembly", "AgentSettings": "assembly", "assemble": "assembly", "local_parts": "assembly",
    "context_policy": "assembly", "final_max_turns": "assembly", "finish_lines": "finish",
    "run_rollout": "rollout.runner", "GenerationBatcher": "rollout.batcher", "TaskCursor": "cursor",
    "resolve_backend": "backend",
    "RunDir": "rundir", "RunDirError": "rundir",
    "EvalPlan": "evaluation", "evaluate": "evaluation", "plan_evaluation": "evaluation", "summarize": "evaluation",
    "to_markdown": "eval_tables", "compare": "eval_tables",
    "record_demos": "demos", "read_conversations": "demos", "check_not_held_out": "demos", "meta_path": "demos",
    "encode_conversation": "conversation", "ConversationError": "conversation",
    "phase": "profiling",
    # -- envs as services -----------------------------------------------------------------------
    "EnvLauncher": "env.launcher", "open_env_pool": "env.launcher",
    "build_env_server": "env.host", "ServerThread": "env.host",
    # -- testing kit (also a pytest plugin: fixtures plugin_manager, register_plugin) ----------
    "check_env": "testing", "check_component_options": "testing", "play_over_http": "testing",
    "ScriptedEngine": "testing", "load_script": "testing",
}

#: Public helpers named like a core module, and the module to import each from.
SAME_NAME = {"rollout": "rollout", "conversation": "rollout.strategy", "profiling": "profiling"}

__all__ = ["SAME_NAME", "__version__", *sorted(_PUBLIC)]  # noqa: PLE0604 (from _PUBLIC: the names listed once)


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        value = getattr(importlib.import_module(f"{__name__}.{_PUBLIC[name]}"), name)
        globals()[name] = value
        return value
    if name == "LLMAgent":  # where it was before it moved to the umbrella
        from .catalogue import UMBRELLA, install_hint

        raise AttributeError(f"agentgym_core has no LLMAgent: it is in the {UMBRELLA} distribution, "
                             f"`from agentgym.agents import LLMAgent` (to install it: {install_hint(UMBRELLA)})")
    raise AttributeError(f"module 'agentgym_core' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})
