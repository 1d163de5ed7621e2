"""The seed project's agent API: ``LLMAgent(base_model=...)``, ``.train`` and ``.infer``.

    agent = LLMAgent(base_model="smollm2-135m-instruct")
    agent.infer("You are in a room with a door.", instruction="Escape. Act as 'Action: <act>'.")
    trajectory = agent.infer("babyai")          # one episode of a registered env (or a BaseEnv)
    LLMAgent(strategy="reflect", strategy_options={"attempts": 3}).infer("babyai", all_attempts=True)
    agent.train("babyai", method="GRPO", max_steps=30, config="configs/quickstart.yaml")

The model is loaded on first use through the configured engine plugin (``hf`` by default). The
run config ``train`` builds is :mod:`agentgym.training`'s.
"""
from __future__ import annotations

import dataclasses
import inspect
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from agentgym_core import AgentGymError, AgentSettings, BaseEnv, ConfigError, did_you_mean, local_parts
from agentgym_core.config_schema import schema_default

from .training import build, holds_results, registered_env, remember_given, train_config, warm_start_config


#: The defaults ``LLMAgent`` chooses for playing, unlike a training run's (config_schema): greedy,
#: longer replies, a longer context, a horizon. Its other defaults are the run config's own
#: (:func:`~agentgym_core.config_schema.schema_default`), read from there, not restated.
INFERENCE_DEFAULTS: dict[str, Any] = {"max_new_tokens": 128, "temperature": 0.0, "max_turns": 20, "max_context": 4096}


@dataclass
class Reply:
    """One model reply to an observation: the raw text and the parsed action (None if unparsable)."""

    text: str
    action: Optional[str]
    parse_error: Optional[str] = None

    def __str__(self) -> str:
        return self.action if self.action is not None else self.text


class LLMAgent:
    """An LLM acting in text environments; greedy by default (``temperature=0``).

    *strategy* names how it plays an env's task (``default``, ``plan``, ``reflect``, ...;
    ``agentgym list strategies``), with *strategy_options* its options (``{"attempts": 3}``),
    checked at once like a config's ``agent.strategy`` section.
    """

    @remember_given
    def __init__(
        self,
        base_model: str = schema_default("model.path"),
        *,
        engine: str = schema_default("engine.name"),
        dtype: str = schema_default("model.dtype"),
        chat_template: Optional[str] = schema_default("model.chat_template"),
        system_prompt: Optional[str] = schema_default("agent.system_prompt"),
        action_format: Optional[str] = schema_default("agent.action_format"),
        max_new_tokens: int = INFERENCE_DEFAULTS["max_new_tokens"],
        temperature: float = INFERENCE_DEFAULTS["temperature"],
        max_turns: int = INFERENCE_DEFAULTS["max_turns"],
        max_context: int = INFERENCE_DEFAULTS["max_context"],
        seed: int = schema_default("run.seed"),
        strategy: str = schema_default("agent.strategy.name"),
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
        _check_engine_options(engine, engine_options)
        self._engine: Any = None
        #: The constructor arguments the caller passed (only those override a config file in ``train``).
        self.given: set[str] = set()
        #: The resolved config of the last :meth:`train` (``infer`` plays its env in that setup).
        self.trained_config: Any = None

    @property
    def engine(self) -> Any:
        if self._engine is None:
            from agentgym_core import get_plugin_manager

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
        argument after :meth:`train`, the trained env. After training, the trained env (by name,
        class or instance) plays in the run's setup: its ``agent`` and ``rollout`` sections,
        ``model.max_context`` and chat template, and the scheduler's final horizon, with the
        run's ``env`` options (a name or class) or the instance's own; *instruction*,
        *action_format* and *max_turns* given here still win, and decoding stays this agent's
        (greedy by default). Other envs, and any env before training, use their own defaults.
        *task_id* defaults to the env's first held-out task (its ``test`` split, else the first split).
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

    def train(self, env: Any, method: Optional[str] = None, *, warm_start: Optional[str] = None,
              sft: Optional[dict[str, Any]] = None, **options: Any) -> dict[str, Any]:
        """Train on registered env *env* with the same components as ``agentgym train``; returns final metrics.

        *env* is a registered env's name, or an env class or instance of an installed plugin (what
        ``from agentgym.envs import BabyAIEnv`` gives); an instance's options become the run's
        ``env`` options (see :func:`agentgym.training.env_options`).

        *options* are those of :meth:`train_config` (``max_steps``, ``algorithm``, ``run_name``,
        ``config`` and dotted config keys), which also says what wins over what. Afterwards the
        agent acts with the trained weights, and ``infer(env)`` plays in the run's setup.

        *warm_start* first fine-tunes on demonstrations, for a model that cannot act in *env* yet (RL
        learns nothing where every episode fails alike): ``"expert"`` (the env's expert plays train
        tasks), an expert's name, or a demonstrations file. The run is then a pipeline, ``sft`` then
        ``rl`` (:func:`agentgym.training.warm_start_config`; *sft* sets the sft stage's ``trainer``
        options), and the result holds each stage's held-out success under ``"stages"``.
        """
        from agentgym_core import build_component, finish_lines, get_plugin_manager

        manager = get_plugin_manager()
        if sft is not None and warm_start is None:
            raise AgentGymError("LLMAgent.train(sft={...}) sets the warm start's sft stage; pass warm_start='expert' "
                                "(or an expert's name, or a demonstrations file) too")
        cfg = self.train_config(env, method, manager=manager, **options)
        if options.get("run_name") is None and "run.name" not in options and not cfg.run.overwrite:
            # A name nobody chose (the agent's default or the file's): a second train() gets its
            # own directory ("agent-2") instead of the trainer refusing the first one's.
            root, name, n = Path(cfg.run.output_dir), cfg.run.name, 2
            while holds_results(root / name):
                name, n = f"{cfg.run.name}-{n}", n + 1
            if name != cfg.run.name:
                print(f"LLMAgent.train: {root / cfg.run.name} holds an earlier run; this one goes to {root / name}",
                      file=sys.stderr, flush=True)
                cfg = self.train_config(env, method, manager=manager, **{**options, "run_name": name})
        if warm_start is not None:
            return self._train_pipeline(warm_start_config(cfg, warm_start, sft, manager), manager)
        if "stages" in cfg:
            raise ConfigError("the config holds stages: (a pipeline); LLMAgent.train trains one trainer. Run the "
                              "pipeline with `agentgym train -c FILE`, then LLMAgent(base_model=<its last checkpoint>)")
        trainer = build_component(manager, "trainers", cfg.trainer, cfg, manager)
        metrics = trainer.fit()
        for line in finish_lines(getattr(trainer, "summary", {}), Path(cfg.run.output_dir) / cfg.run.name, manager):
            print(line, flush=True)  # what `agentgym train` prints: held-out success before/after, the run
        ckpt = trainer.run_dir.latest_checkpoint() if getattr(trainer, "run_dir", None) is not None else None
        if ckpt is not None:  # act with the trained policy from now on
            self.close()
            self.base_model = str(ckpt)
            self.given.add("base_model")  # a further train() continues from it
            self.trained_config = cfg
        return metrics

    def _train_pipeline(self, cfg: Any, manager: Any) -> dict[str, Any]:
        """Run the warm start's stages, print each one's held-out success (as ``agentgym train`` does for a
        pipeline) and act with the last stage's weights from then on."""
        from omegaconf import OmegaConf

        from agentgym_core.config import validate
        from agentgym_core.pipeline import run_pipeline, summary_lines

        root = Path(cfg.run.output_dir) / cfg.run.name
        stages = run_pipeline(cfg, manager, echo=lambda line: print(line, file=sys.stderr, flush=True))
        for line in summary_lines(stages, root):  # what `agentgym train` prints for a pipeline
            print(line, flush=True)
        last = root / stages[-1]["name"]
        self.close()
        self.base_model = stages[-1]["checkpoint"]
        self.given.add("base_model")
        self.trained_config = validate(OmegaConf.load(last / "config.yaml"), manager)
        rows = (last / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
        return {**(json.loads(rows[-1]) if rows else {}), "stages": stages}

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
        already uses it) or an algorithm name (``GRPO``, ``PPO``, ``RLOO``, ``REINFORCE++``, ...:
        every estimator of ``agentgym_trainer_rl.registry``) with a ``fixed`` horizon: ``max_turns``
        if the constructor was given it, else the file scheduler's final horizon. Without *method*
        the file's scheduler is kept
        (``scaling_inter`` when there is none). *overrides* are dotted config keys, passed as
        ``**{"trainer.lr": 1e-5}``.
        """
        return train_config(self, env, method, max_steps=max_steps, algorithm=algorithm, run_name=run_name,
                            config=config, manager=manager, overrides=overrides)

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None

    # -- internals --------------------------------------------------------------------------
    def _reply(self, observation: str, instruction: str, fmt: str) -> Reply:
        from agentgym_core import ChatFormat, GenerationRequest, SamplingParams
        from agentgym_core.rollout.actions import STOP_STRINGS, parse_action

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
        from agentgym_core import run_rollout

        if self._trained_on(env):  # the setup it was trained in (see infer)
            parts = self._trained_parts(None if isinstance(env, (str, type)) else env)
            max_turns = max_turns or parts.final_max_turns
        else:
            if isinstance(env, str):
                from agentgym_core.env.host import resolve_env

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

    def _trained_parts(self, instance: Optional[BaseEnv]) -> Any:
        """Parts for playing the trained env in-process, in the run's setup, with this agent's engine:
        the run's env options, or *instance* itself with the run's agent settings and strategy."""
        cfg = self.trained_config
        if instance is not None:
            from agentgym_core import context_policy, get_plugin_manager

            return local_parts(self.engine, instance, name=cfg.env.name, agent=AgentSettings.from_config(cfg),
                               strategy=build(None, "strategies", cfg.agent.strategy),
                               context=context_policy(cfg, get_plugin_manager()),
                               scheduler=build(None, "schedulers", cfg.scheduler))
        import asyncio

        from agentgym_core import assemble

        parts = asyncio.run(assemble(cfg, local=True))  # an in-process pool: usable from any loop
        parts.engine, parts.owns_engine = self.engine, False
        return parts

    def _trained_on(self, env: Any) -> bool:
        """Whether *env* (a name, class or instance) is the registered env of the last :meth:`train`."""
        if self.trained_config is None:
            return False
        if isinstance(env, str):
            return env == self.trained_config.env.name
        if not (isinstance(env, BaseEnv) or (isinstance(env, type) and issubclass(env, BaseEnv))):
            return False
        from agentgym_core import get_plugin_manager

        try:
            name, _ = registered_env(env if isinstance(env, type) else type(env), get_plugin_manager())
        except AgentGymError:  # not a registered env (or registered twice): its own defaults
            return False
        return name == self.trained_config.env.name


def _check_engine_options(engine: str, options: dict[str, Any]) -> None:
    """Refuse, when the agent is made, keywords that are neither an ``LLMAgent`` argument nor an option of
    *engine* (``dtyp="fp32"``), with a "did you mean" over both; check the engine's options' values."""
    from agentgym_core import check_options, get_plugin_manager

    config = get_plugin_manager().registry("engines").get(engine).config_class()
    fields = [f.name for f in dataclasses.fields(config)] if dataclasses.is_dataclass(config) else []
    own = [p for p in inspect.signature(LLMAgent.__init__).parameters if p not in ("self", "engine_options")]
    for key in options:
        if key not in fields:
            raise ConfigError(f"LLMAgent: unknown argument {key!r}.{did_you_mean(key, [*own, *fields])} It takes "
                              f"{', '.join(own)}, and engine {engine!r}'s options: {', '.join(fields) or 'none'}")
    check_options(f"LLMAgent: engine {engine!r}", config, options)


def _build_strategy(name: str, options: dict[str, Any]) -> Any:
    """The registered strategy *name* built with *options*, checked like ``agent.strategy`` in a config."""
    from agentgym_core import check_options, get_plugin_manager

    entry = get_plugin_manager().registry("strategies").get(name)
    check_options(f"strategy {name!r}", entry.config_class(), options)
    return entry.load()(**options)


def _is_env_name(text: str) -> bool:
    if not text or any(c.isspace() for c in text):
        return False
    from agentgym_core import get_plugin_manager

    try:
        get_plugin_manager().registry("envs").get(text)
    except Exception:  # noqa: BLE001 - not a registered env: treat as an observation
        return False
    return True


__all__ = ["LLMAgent", "Reply"]
