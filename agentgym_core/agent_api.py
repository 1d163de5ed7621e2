"""The Python API of the seed project: ``LLMAgent(base_model=...)`` and ``.infer``.

    agent = LLMAgent(base_model="smollm2-135m-instruct")
    agent.infer("You are in a room with a door.", instruction="Escape. Act as 'Action: <act>'.")
    trajectory = agent.infer("babyai")          # one episode of a registered env (or a BaseEnv)
    LLMAgent(strategy="reflect", strategy_options={"attempts": 3}).infer("babyai", all_attempts=True)
    agent.train("babyai", method="GRPO", max_steps=30, config="configs/quickstart.yaml")

The model is loaded on first use through the configured engine plugin (``hf`` by default).
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from .assembly import local_parts
from .env.base import BaseEnv
from .errors import AgentGymError


@dataclass
class Reply:
    """One model reply to an observation: the raw text and the parsed action (None if unparsable)."""

    text: str
    action: Optional[str]
    parse_error: Optional[str] = None

    def __str__(self) -> str:
        return self.action if self.action is not None else self.text


def _remember_given(init: Callable[..., None]) -> Callable[..., None]:
    """Records which constructor arguments the caller passed (``self._given``): in :meth:`LLMAgent.train`
    only those override a config file, the rest are defaults the file's values win over."""
    signature = inspect.signature(init)

    @functools.wraps(init)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self._given = set(signature.bind(self, *args, **kwargs).arguments) - {"self", "engine_options"}

    return wrapper


#: LLMAgent constructor arguments -> the run config keys they set in ``train`` (when passed).
_TRAIN_KEYS = {"base_model": "model.path", "dtype": "model.dtype", "max_context": "model.max_context",
               "chat_template": "model.chat_template", "system_prompt": "agent.system_prompt",
               "action_format": "agent.action_format", "engine_name": "engine.name", "seed": "run.seed",
               "strategy": "agent.strategy.name"}
_ALGORITHMS = {"grpo": "grpo", "ppo": "ppo", "rloo": "rloo", "reinforcepp": "reinforce_pp", "reinforcepp2": "reinforce_pp"}


class LLMAgent:
    """An LLM acting in text environments; greedy by default (``temperature=0``).

    *strategy* names how it plays an env's task (``default``, ``plan``, ``reflect``, ...;
    ``agentgym list strategies``), with *strategy_options* its options (``{"attempts": 3}``),
    checked at once like a config's ``agent.strategy`` section.
    """

    @_remember_given
    def __init__(
        self,
        base_model: str = "smollm2-135m-instruct",
        *,
        engine: str = "hf",
        dtype: str = "auto",
        chat_template: Optional[str] = None,
        system_prompt: Optional[str] = None,
        action_format: Optional[str] = None,
        max_new_tokens: int = 128,
        temperature: float = 0.0,
        max_turns: int = 20,
        max_context: int = 4096,
        seed: int = 0,
        strategy: str = "default",
        strategy_options: Optional[dict[str, Any]] = None,
        **engine_options: Any,
    ) -> None:
        self.base_model = base_model
        self.engine_name = engine
        self.dtype = dtype
        self.chat_template = chat_template
        self.system_prompt = system_prompt
        self.action_format = action_format
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.max_turns = max_turns
        self.max_context = max_context
        self.seed = seed
        self.strategy = strategy
        self.strategy_options = dict(strategy_options or {})
        self._strategy = _build_strategy(strategy, self.strategy_options)
        self.engine_options = engine_options
        self._engine: Any = None
        self._given: set[str] = set()
        #: The resolved config of the last :meth:`train` (``infer`` plays its env in that setup).
        self.trained_config: Any = None

    @property
    def engine(self) -> Any:
        if self._engine is None:
            from .plugins import get_plugin_manager

            cls = get_plugin_manager().registry("engines").load(self.engine_name)
            self._engine = cls(self.base_model, dtype=self.dtype, chat_template=self.chat_template, **self.engine_options)
        return self._engine

    def infer(
        self,
        observation_or_env: Any = None,
        *,
        instruction: Optional[str] = None,
        action_format: Optional[str] = None,
        task_id: Optional[int] = None,
        max_turns: Optional[int] = None,
        all_attempts: bool = False,
    ) -> Any:
        """A :class:`Reply` to an observation string, or the :class:`Trajectory` of one episode of an env.

        With a strategy that tries again after a failure (``reflect``) the trajectory is the last
        attempt's; *all_attempts* returns the list of every attempt's instead (one with the default).

        An env is a ``BaseEnv`` instance or subclass, or the name of a registered env; with no
        argument after :meth:`train`, the trained env. After training, the trained env plays in
        the run's setup: its ``env`` options (levels, brief, ...), ``agent`` and ``rollout``
        sections, ``model.max_context`` and chat template, and the scheduler's final horizon;
        *instruction*, *action_format* and *max_turns* given here still win, and decoding stays
        this agent's (greedy by default). Other envs, and any env before training, use their own
        defaults. *task_id* defaults to the env's first held-out task (its ``test`` split, else
        the first split).
        """
        if observation_or_env is None:
            if self.trained_config is None:
                raise AgentGymError("infer() needs an observation string, an env or an env name "
                                    "(with no argument it plays the env of the last train(), and nothing was trained)")
            observation_or_env = self.trained_config.env.name
        if isinstance(observation_or_env, str) and not _is_env_name(observation_or_env):
            return self._reply(observation_or_env, instruction or "", action_format or self.action_format or "free")
        attempts = self._episode(observation_or_env, instruction, action_format, task_id, max_turns)
        return attempts if all_attempts else attempts[-1]

    def train(self, env: Any, method: Optional[str] = None, **options: Any) -> dict[str, Any]:
        """Train on registered env *env* with the same components as ``agentgym train``; returns final metrics.

        *env* is a registered env's name, or an env class or instance of an installed plugin (what
        ``from agentgym.envs import BabyAIEnv`` gives); an instance's options become the run's
        ``env`` options (see :func:`env_options`).

        *options* are those of :meth:`train_config` (``max_steps``, ``algorithm``, ``run_name``,
        ``config`` and dotted config keys), which also says what wins over what. Afterwards the
        agent acts with the trained weights, and ``infer(env)`` plays in the run's setup.
        """
        from .config import build_component
        from .plugins import get_plugin_manager

        manager = get_plugin_manager()
        cfg = self.train_config(env, method, manager=manager, **options)
        if options.get("run_name") is None and "run.name" not in options and not cfg.run.overwrite:
            # A name nobody chose (the agent's default or the file's): a second train() gets its
            # own directory ("agent-2") instead of the trainer refusing the first one's.
            root, name, n = Path(cfg.run.output_dir), cfg.run.name, 2
            while _holds_results(root / name):
                name, n = f"{cfg.run.name}-{n}", n + 1
            if name != cfg.run.name:
                print(f"LLMAgent.train: {root / cfg.run.name} holds an earlier run; this one goes to {root / name}",
                      file=sys.stderr, flush=True)
                cfg = self.train_config(env, method, manager=manager, **{**options, "run_name": name})
        if "stages" in cfg:
            from .errors import ConfigError

            raise ConfigError("the config holds stages: (a pipeline); LLMAgent.train trains one trainer. Run the "
                              "pipeline with `agentgym train -c FILE`, then LLMAgent(base_model=<its last checkpoint>)")
        trainer = build_component(manager, "trainers", cfg.trainer, cfg, manager)
        metrics = trainer.fit()
        ckpt = trainer.run_dir.latest_checkpoint() if getattr(trainer, "run_dir", None) is not None else None
        if ckpt is not None:  # act with the trained policy from now on
            self.close()
            self.base_model = str(ckpt)
            self._given.add("base_model")  # a further train() continues from it
            self.trained_config = cfg
        return metrics

    def train_config(
        self,
        env: Any,
        method: Optional[str] = None,
        *,
        max_steps: Optional[int] = None,
        algorithm: Optional[str] = None,
        run_name: Optional[str] = None,
        config: Optional[str] = None,
        manager: Any = None,
        **overrides: Any,
    ) -> Any:
        """The validated run config :meth:`train` would use, without training.

        Later layers win: this agent's defaults (``model.path``, ``dtype``, ``max_context``,
        run name ``agent``, 100 steps, GRPO) < the *config* file < what was passed explicitly
        (constructor arguments such as ``base_model`` or ``max_context``, *env*, *max_steps*,
        *run_name*, *algorithm*, *method*) < *overrides*. *method* is ``ScalingInter-RL``
        (horizon raised in stages: the ``scaling_inter`` scheduler, the file's rounds kept if it
        already uses it) or an algorithm name (``GRPO``, ``PPO``, ``RLOO``, ``REINFORCE++``)
        with a ``fixed`` horizon: ``max_turns`` if the constructor was given it, else the file
        scheduler's final horizon. Without *method* the file's scheduler is kept
        (``scaling_inter`` when there is none). *overrides* are dotted config keys, passed as
        ``**{"trainer.lr": 1e-5}``.
        """
        from omegaconf import OmegaConf

        from .config import compose_raw, validate
        from .config_schema import SECTIONS

        key = method.lower().replace("-", "").replace("_", "").replace("+", "p") if method else None
        if key is not None and key != "scalinginterrl" and key not in _ALGORITHMS:
            raise AgentGymError(f"unknown training method {method!r}; use ScalingInter-RL, GRPO, PPO, RLOO or REINFORCE++")
        for name in overrides:
            if "." not in name and name not in SECTIONS:
                raise AgentGymError(
                    f"LLMAgent.train({name}=...): extra keyword arguments are dotted config keys, which Python "
                    f"names cannot spell; pass them as **{{'<section>.{name}': value}}, e.g. **{{'trainer.lr': 1e-5}}"
                )
        if manager is None:
            from .plugins import get_plugin_manager

            manager = get_plugin_manager()
        env, env_given = registered_env(env, manager)
        data = OmegaConf.to_container(compose_raw([config] if config else []), resolve=False)
        if isinstance(data.get("env"), dict) and (env_given is not None or data["env"].get("name") not in (None, env)):
            del data["env"]  # another env's options, or an env instance: its own options are the env
        if key == "scalinginterrl" or (key is None and "scheduler" not in data):
            if (data.get("scheduler") or {}).get("name") != "scaling_inter":
                data["scheduler"] = {"name": "scaling_inter"}
        elif key is not None:
            turns = self.max_turns
            if "max_turns" not in self._given and data.get("scheduler"):
                from .evaluation import final_horizon

                file_scheduler = validate(OmegaConf.create({"scheduler": data["scheduler"]}), manager).scheduler
                turns = final_horizon(_build(manager, "schedulers", file_scheduler))
            data["scheduler"] = {"name": "fixed", "turns": turns}
        defaults = {"run.name": "agent", "model.path": self.base_model, "model.dtype": self.dtype,
                    "model.max_context": self.max_context, "trainer.name": "rl", "trainer.steps": 100,
                    "trainer.algorithm": "grpo"}
        passed = self._given | ({"engine_name"} if "engine" in self._given else set())
        given = {cfg_key: getattr(self, arg) for arg, cfg_key in _TRAIN_KEYS.items() if arg in passed}
        given.update({f"engine.{k}": v for k, v in self.engine_options.items()})  # e.g. device="cuda"
        given.update({f"agent.strategy.{k}": v for k, v in self.strategy_options.items()})
        given["env.name"] = env
        given.update({f"env.{k}": v for k, v in (env_given or {}).items()})
        for cfg_key, value in (("trainer.steps", max_steps), ("run.name", run_name), ("trainer.algorithm", algorithm)):
            if value is not None:
                given[cfg_key] = value
        if key in _ALGORITHMS:
            given["trainer.algorithm"] = _ALGORITHMS[key]
        typed = {k: v for k, v in overrides.items() if not isinstance(v, str)}
        text = [f"{k}={v}" for k, v in overrides.items() if isinstance(v, str)]
        merged = OmegaConf.merge(_nested(defaults), data, _nested(given), _nested(typed), compose_raw([], text))
        return validate(merged, manager)

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None

    # -- internals --------------------------------------------------------------------------
    def _reply(self, observation: str, instruction: str, fmt: str) -> Reply:
        from .engine import GenerationRequest, SamplingParams
        from .rollout.actions import STOP_STRINGS, parse_action
        from .rollout.chat import ChatFormat

        chat = ChatFormat(self.engine.tokenizer, self.chat_template)
        system = "\n\n".join(p for p in (self.system_prompt, instruction) if p) or "You are a helpful agent."
        _, _, ids = chat.start(system, observation)
        params = SamplingParams(temperature=self.temperature, max_new_tokens=self.max_new_tokens, seed=self.seed,
                                stop_strings=tuple(STOP_STRINGS[fmt]) + chat.stop_strings, stop_token_ids=chat.stop_token_ids)
        result = self.engine.generate([GenerationRequest(ids, params)])[0]
        content, _ = chat.split_reply(result.token_ids)
        action, error = parse_action(content, fmt)
        return Reply(text=content, action=action, parse_error=error)

    def _episode(self, env: Any, instruction: Optional[str], fmt: Optional[str], task_id: Optional[int],
                 max_turns: Optional[int]) -> list[Any]:
        from .rollout.runner import run_rollout

        if isinstance(env, str) and self._trained_on(env):  # the setup it was trained in (see infer)
            parts = self._trained_parts()
            max_turns = max_turns or self._final_horizon()
        else:
            if isinstance(env, str):
                from .env.host import resolve_env

                target, name = resolve_env(env)[0], env
            elif (isinstance(env, type) and issubclass(env, BaseEnv)) or isinstance(env, BaseEnv):
                target, name = env, (env.__name__ if isinstance(env, type) else type(env).__name__)
            else:
                raise AgentGymError(
                    f"infer() takes an observation string, a BaseEnv or an env name, not {type(env).__name__}")
            parts = local_parts(self.engine, target, name=name, system_prompt=self.system_prompt,
                                action_format=self.action_format, max_new_tokens=self.max_new_tokens,
                                max_episode_tokens=self.max_context, max_context=self.max_context,
                                chat_template=self.chat_template, strategy=self._strategy)
            max_turns = max_turns or self.max_turns
        parts.agent = parts.agent.replace(temperature=self.temperature, seed=self.seed,
                                          **({"action_format": fmt} if fmt else {}))
        if instruction is not None:
            parts.env = dataclasses.replace(parts.env, instruction=instruction)
        if task_id is None:
            splits = parts.env.splits
            first = splits.get("test") or next((ids for ids in splits.values() if len(ids)), None)
            task_id = first[0] if first else 0
        try:
            return run_rollout(parts, [(task_id, 0)], max_turns=max_turns)
        finally:
            import asyncio

            asyncio.run(parts.pool.aclose())

    def _trained_parts(self) -> Any:
        """Parts for playing the trained env in-process, in the run's setup, with this agent's engine."""
        import asyncio

        from .assembly import assemble

        parts = asyncio.run(assemble(self.trained_config, local=True))  # an in-process pool: usable from any loop
        parts.engine, parts.owns_engine = self.engine, False
        return parts

    def _final_horizon(self) -> int:
        from .evaluation import final_horizon

        return final_horizon(_build(None, "schedulers", self.trained_config.scheduler))

    def _trained_on(self, env: str) -> bool:
        return self.trained_config is not None and self.trained_config.env.name == env


def _nested(items: dict[str, Any]) -> dict[str, Any]:
    """``{"model.path": x}`` -> ``{"model": {"path": x}}`` (values kept as they are)."""
    out: dict[str, Any] = {}
    for dotted, value in items.items():
        *parents, last = dotted.split(".")
        node = out
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return out


def _build(manager: Any, kind: str, section: Any) -> Any:
    from .config import build_component
    from .plugins import get_plugin_manager

    return build_component(manager or get_plugin_manager(), kind, section)


def _build_strategy(name: str, options: dict[str, Any]) -> Any:
    """The registered strategy *name* built with *options*, checked like ``agent.strategy`` in a config."""
    from .config import check_options
    from .plugins import get_plugin_manager

    entry = get_plugin_manager().registry("strategies").get(name)
    check_options(f"strategy {name!r}", entry.config_class(), options)
    return entry.load()(**options)


def _is_env_name(text: str) -> bool:
    if not text or any(c.isspace() for c in text):
        return False
    from .plugins import get_plugin_manager

    try:
        get_plugin_manager().registry("envs").get(text)
    except Exception:  # noqa: BLE001 - not a registered env: treat as an observation
        return False
    return True


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


def _holds_results(path: Path) -> bool:
    """Whether a run directory has results a new run must not write into."""
    metrics = path / "metrics.jsonl"
    return (metrics.is_file() and metrics.stat().st_size > 0) or any((path / "checkpoints").glob("step_*"))
