"""What :meth:`LLMAgent.train <agentgym.agents.LLMAgent.train>` trains in: the run config built
from an agent, an env (a name, class or instance) and a method, and the env mapping behind it.

The plugin names here (the ``rl`` trainer, its algorithms, the ``scaling_inter`` scheduler) are
the umbrella's to name: it depends on those plugins; core names none of them.
"""
from __future__ import annotations

import functools
import inspect
from pathlib import Path
from typing import Any, Callable, Optional

from agentgym_core import AgentGymError, BaseEnv, did_you_mean, final_max_turns

#: LLMAgent constructor arguments -> the run config keys they set in ``train`` (when passed).
TRAIN_KEYS = {"base_model": "model.path", "dtype": "model.dtype", "max_context": "model.max_context",
              "chat_template": "model.chat_template", "system_prompt": "agent.system_prompt",
              "action_format": "agent.action_format", "engine_name": "engine.name", "seed": "run.seed",
              "strategy": "agent.strategy.name"}
#: The method that raises the horizon in stages (the ``scaling_inter`` scheduler) instead of naming an algorithm.
SCALING_INTER = "scalinginterrl"
#: What a run trains with when neither the agent, the file nor the call says.
TRAIN_DEFAULTS = {"run.name": "agent", "trainer.name": "rl", "trainer.steps": 100, "trainer.algorithm": "grpo"}
#: Without a config file, a run sized for a first result in minutes on a small CPU (the seed
#: snippet's usage): 8 episodes a step of at most 48 new tokens a turn, an 8-task evaluation, and
#: ScalingInter-RL's horizon raised 2 -> 4 -> 6 over the run (:func:`spread_rounds`; to a third, two
#: thirds and all of ``LLMAgent(max_turns=N)`` when the agent was given one). A config
#: file replaces all of it; single keys are overrides (``**{"scheduler.rounds": [6, 13, 20]}``).
NO_CONFIG_DEFAULTS = {"rollout.tasks_per_step": 2, "rollout.group_size": 4, "rollout.max_new_tokens": 48,
                      "eval.tasks": 8}
NO_CONFIG_ROUNDS = [2, 4, 6]
#: Without a config file, a LoRA run (the rl trainer's default) learns at this rate, not the trainer's 1e-5 (a
#: full fine-tune's): 8 GRPO steps at 1e-4 took BabyAI PutNextLocal from 28.1% to 48.4% after sft
#: (configs/babyai-sft-rl.yaml); 4 steps at 1e-5 after a warm start moved nothing (53.1% -> 50.0%).
NO_CONFIG_LORA_LR = 1e-4


def spread_rounds(rounds: list[int], steps: int) -> dict[str, Any]:
    """A ``scaling_inter`` section whose stages all happen within *steps* (one stage every
    ``steps / len(rounds)`` steps), so the horizon evaluated after training is one it trained at."""
    return {"name": "scaling_inter", "rounds": list(rounds), "step_interval": max(1, int(steps) // len(rounds))}


def thirds(max_turns: int) -> list[int]:
    """ScalingInter-RL's stages up to a horizon the agent was given: a third, two thirds, all of it
    (``LLMAgent(max_turns=20)`` -> ``[7, 13, 20]``; short horizons keep the distinct ones)."""
    return sorted({max(1, round(max_turns * k / 3)) for k in (1, 2, 3)})


def loose(spelling: str) -> str:
    """``method=`` names compare in lower case, without ``-`` and ``_``, ``+`` read as ``p``."""
    return spelling.lower().replace("-", "").replace("_", "").replace("+", "p")


def rl_methods(manager: Any = None) -> dict[str, str]:
    """``method=`` spellings -> the rl trainer's algorithm: every estimator it registers, each by its seed-API
    spellings, then its names (``RLConfig.methods()``, reached through the trainers registry)."""
    if manager is None:
        from agentgym_core import get_plugin_manager

        manager = get_plugin_manager()
    return manager.registry("trainers").get("rl").config_class().methods()


def method_algorithm(key: str, manager: Any = None) -> Optional[str]:
    """The rl algorithm of a :func:`loose` ``method=`` name (None: not one)."""
    return {loose(s): name for s, name in rl_methods(manager).items()}.get(key)


def method_key(method: Optional[str], manager: Any = None) -> Optional[str]:
    """``"ScalingInter-RL"`` -> ``"scalinginterrl"``, ``"REINFORCE++"`` -> ``"reinforcepp"``; an unknown one fails."""
    if method is None:
        return None
    key = loose(method)
    if key == SCALING_INTER or method_algorithm(key, manager) is not None:
        return key
    shown: dict[str, str] = {}  # each algorithm's first spelling
    for spelling, name in rl_methods(manager).items():
        shown.setdefault(name, spelling)
    names = ["ScalingInter-RL", *shown.values()]
    raise AgentGymError(f"unknown training method {method!r}; use {', '.join(names[:-1])} or {names[-1]}."
                        f"{did_you_mean(key, [SCALING_INTER, *map(loose, rl_methods(manager))])}")


def remember_given(init: Callable[..., None]) -> Callable[..., None]:
    """Records which constructor arguments the caller passed (``self.given``): in ``train`` only
    those override a config file; the rest are defaults the file's values win over."""
    signature = inspect.signature(init)

    @functools.wraps(init)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.given = set(signature.bind(self, *args, **kwargs).arguments) - {"self", "engine_options"}

    return wrapper


def nested(items: dict[str, Any]) -> dict[str, Any]:
    """``{"model.path": x}`` -> ``{"model": {"path": x}}`` (values kept as they are)."""
    out: dict[str, Any] = {}
    for dotted, value in items.items():
        *parents, last = dotted.split(".")
        node = out
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return out


def build(manager: Any, kind: str, section: Any) -> Any:
    """The component a config section names (``scheduler``, ...), from *manager* (None: the process's)."""
    from agentgym_core import build_component, get_plugin_manager

    return build_component(manager or get_plugin_manager(), kind, section)


def registered_env(env: Any, manager: Any) -> tuple[str, Optional[dict[str, Any]]]:
    """The registered name of *env* (a name, or a BaseEnv subclass or instance of an installed plugin),
    and an instance's options (:func:`env_options`; None for a name or a class)."""
    if isinstance(env, str):
        return env, None
    cls = env if isinstance(env, type) else type(env)
    if not issubclass(cls, BaseEnv):
        raise AgentGymError(f"LLMAgent.train(env) takes a registered env's name (e.g. 'babyai') or a BaseEnv "
                            f"subclass or instance, not {type(env).__name__}")
    registry = manager.registry("envs")
    here = f"{cls.__module__}:{cls.__qualname__}"
    entries = [e for e in registry.entries() if e.target == here]
    if not entries:  # registered under another import path (a re-export): import only same-named classes
        entries = [e for e in registry.entries()
                   if e.target.rpartition(":")[2].rpartition(".")[2] == cls.__name__ and _loads(e) is cls]
    if len(entries) != 1:
        problem = ("is registered under several names: " + ", ".join(e.name for e in entries) + "; pass one"
                   if entries else "is not a registered env: training runs envs by registered name (in env "
                   "servers), so register it with an entry point (docs/plugins.md) or pass one of: "
                   + ", ".join(registry.names()))
        raise AgentGymError(f"LLMAgent.train: {cls.__name__} ({here}) {problem}")
    entry = entries[0]
    return entry.name, None if isinstance(env, type) else env_options(env, entry)


def _loads(entry: Any) -> Any:
    try:
        return entry.load()
    except AgentGymError:
        return None


def env_options(env: BaseEnv, entry: Any) -> dict[str, Any]:
    """The options *env* (an instance of registered env *entry*) was built with, for a run's ``env``
    section: the keywords ``BaseEnv`` recorded (:attr:`BaseEnv.built_with`). An instance built
    with positional arguments, or with values a config file cannot hold, is an error with the fix."""
    name = type(env).__name__
    options = getattr(env, "built_with", None)
    if options is None:
        raise AgentGymError(f"LLMAgent.train: this {name} was built with positional arguments, which a run config "
                            f"cannot express; build it with keywords ({name}(levels=[...])) or pass the class and its "
                            f"options: agent.train({name}, **{{'env.<option>': ...}})")
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    try:
        OmegaConf.create({"env": options})
    except OmegaConfBaseException as exc:
        raise AgentGymError(f"LLMAgent.train: {name}'s options {options!r} are not all config data (numbers, "
                            f"strings, lists, mappings): {exc}; pass plain values") from None
    return dict(options)


def holds_results(path: Path) -> bool:
    """Whether a run directory has results a new run must not write into."""
    metrics = path / "metrics.jsonl"
    return ((metrics.is_file() and metrics.stat().st_size > 0) or any((path / "checkpoints").glob("step_*"))
            or (path / "pipeline.json").is_file())


#: The named arguments of ``LLMAgent.train`` / ``train_config`` besides *env* (a misspelling of one is named).
TRAIN_ARGUMENTS = ("method", "max_steps", "algorithm", "run_name", "config")


def train_config(agent: Any, env: Any, method: Optional[str], *, max_steps: Optional[int], algorithm: Optional[str],
                 run_name: Optional[str], config: Optional[str], manager: Any, overrides: dict[str, Any]) -> Any:
    """The validated run config of :meth:`LLMAgent.train_config <agentgym.agents.LLMAgent.train_config>`,
    which documents what wins over what."""
    from omegaconf import OmegaConf

    from agentgym_core.config import compose_raw, validate
    from agentgym_core.config_schema import SECTIONS

    for name in overrides:
        if "." not in name and name not in SECTIONS:
            near = did_you_mean(name, TRAIN_ARGUMENTS)
            if near:  # a misspelt argument, not a config key
                raise AgentGymError(f"LLMAgent.train({name}=...) is not an argument.{near} It takes "
                                    f"{', '.join(TRAIN_ARGUMENTS)}, and dotted config keys as **{{'trainer.lr': 1e-5}}")
            raise AgentGymError(
                f"LLMAgent.train({name}=...): extra keyword arguments are dotted config keys, which Python "
                f"names cannot spell; pass them as **{{'<section>.{name}': value}}, e.g. **{{'trainer.lr': 1e-5}}"
            )
    if manager is None:
        from agentgym_core import get_plugin_manager

        manager = get_plugin_manager()
    key = method_key(method, manager)
    env, env_given = registered_env(env, manager)
    data = OmegaConf.to_container(compose_raw([config] if config else []), resolve=False)
    if isinstance(data.get("env"), dict) and (env_given is not None or data["env"].get("name") not in (None, env)):
        del data["env"]  # another env's options, or an env instance: its own options are the env
    if key == SCALING_INTER or (key is None and "scheduler" not in data):
        if config is None:
            rounds = thirds(agent.max_turns) if "max_turns" in agent.given else NO_CONFIG_ROUNDS
            data["scheduler"] = spread_rounds(rounds, max_steps or TRAIN_DEFAULTS["trainer.steps"])
        elif (data.get("scheduler") or {}).get("name") != "scaling_inter":
            data["scheduler"] = {"name": "scaling_inter"}
    elif key is not None:
        turns = agent.max_turns
        if "max_turns" not in agent.given and data.get("scheduler"):
            section = validate(OmegaConf.create({"scheduler": data["scheduler"]}), manager).scheduler
            turns = final_max_turns(build(manager, "schedulers", section))
        elif "max_turns" not in agent.given and config is None:
            turns = NO_CONFIG_ROUNDS[-1]
        data["scheduler"] = {"name": "fixed", "turns": turns}
    defaults = {**TRAIN_DEFAULTS, **(NO_CONFIG_DEFAULTS if config is None else {}), "model.path": agent.base_model,
                "model.dtype": agent.dtype, "model.max_context": agent.max_context}
    passed = agent.given | ({"engine_name"} if "engine" in agent.given else set())
    given = {cfg_key: getattr(agent, arg) for arg, cfg_key in TRAIN_KEYS.items() if arg in passed}
    given.update({f"engine.{k}": v for k, v in agent.engine_options.items()})  # e.g. device="cuda"
    given.update({f"agent.strategy.{k}": v for k, v in agent.strategy_options.items()})
    given["env.name"] = env
    given.update({f"env.{k}": v for k, v in (env_given or {}).items()})
    for cfg_key, value in (("trainer.steps", max_steps), ("run.name", run_name), ("trainer.algorithm", algorithm)):
        if value is not None:
            given[cfg_key] = value
    if key not in (None, SCALING_INTER):
        given["trainer.algorithm"] = method_algorithm(key, manager)
    typed = {k: v for k, v in overrides.items() if not isinstance(v, str)}
    text = [f"{k}={v}" for k, v in overrides.items() if isinstance(v, str)]
    merged = OmegaConf.merge(nested(defaults), data, nested(given), nested(typed), compose_raw([], text))
    trainer = merged.get("trainer") or {}
    if config is None and "trainer.lr" not in overrides and trainer.get("lr") is None \
            and trainer.get("name") == "rl" and trainer.get("finetune", "lora") == "lora":
        merged.trainer.lr = NO_CONFIG_LORA_LR
    return validate(merged, manager)


#: The sft stage ``LLMAgent.train(warm_start=...)`` runs before the rl run: LoRA adapters on the last 8
#: layers, merged before rl (what took BabyAI PutNextLocal from 0% to 28.1% in configs/babyai-sft-rl.yaml),
#: sized for a CPU. ``sft={...}`` replaces any of these (every ``trainer`` option of the sft trainer).
WARM_SFT: dict[str, Any] = {
    "name": "sft", "demos_episodes": 64, "epochs": 2, "batch_size": 4, "finetune": "lora", "lora_r": 32,
    "lora_alpha": 64, "lora_layers": 8,
    "lora_targets": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
    "lr": 1e-3, "warmup_steps": 4}


def warm_start_config(cfg: Any, warm_start: str, sft: Optional[dict[str, Any]], manager: Any) -> Any:
    """The pipeline of ``LLMAgent.train(..., warm_start=...)``: an ``sft`` stage on demonstrations, then the rl
    run *cfg* (a validated run config) as stage ``rl``, from the sft stage's merged weights.

    *warm_start* is ``"expert"`` (the env's expert plays ``demos_episodes`` train tasks first, in this run's
    agent settings: ``agentgym list experts``), an expert's name (``"reference"``, ``"ecommerce.reference"``),
    or a demonstrations file or folder (``agentgym demos ENV --out FILE`` writes one).
    """
    from omegaconf import OmegaConf

    from agentgym_core.config import validate
    from agentgym_core.experts import resolve_expert

    data = OmegaConf.to_container(cfg, resolve=True)
    if "stages" in data:
        raise AgentGymError("LLMAgent.train(warm_start=...) puts an sft stage before the run; the config already "
                            "holds stages: (a pipeline): run it with `agentgym train -c FILE` instead")
    if not isinstance(warm_start, str) or not warm_start:
        raise AgentGymError(f"LLMAgent.train(warm_start={warm_start!r}): pass 'expert' (the env's expert plays train "
                            "tasks first), an expert's name, or a demonstrations file (agentgym demos ENV --out FILE)")
    stage = {**WARM_SFT, "max_length": int(data["model"]["max_context"])}
    if "local_envs" in data["trainer"]:
        stage["local_envs"] = data["trainer"]["local_envs"]
    if warm_start != "expert" and Path(warm_start).expanduser().exists():
        stage["data"] = str(Path(warm_start).expanduser().resolve())
    else:  # (a file named "expert" in the working directory is not the data: "./expert" is)
        name = None if warm_start == "expert" else warm_start
        stage["demos_expert"] = resolve_expert(manager, data["env"]["name"], name).name
    extra = dict(sft or {})
    if extra.get("name", "sft") != "sft":
        raise AgentGymError(f"LLMAgent.train(sft={{'name': {extra['name']!r}}}): the warm start's trainer is sft; "
                            "sft= takes its options (epochs, demos_episodes, lr, finetune, ...)")
    if "data" in extra:
        stage.pop("demos_expert", None)
    stage.update(extra)
    data["stages"] = [{"name": "sft", "trainer": stage}, {"name": "rl"}]
    return validate(OmegaConf.create(data), manager)
