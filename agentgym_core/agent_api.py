"""The Python API of the seed project: ``LLMAgent(base_model=...)`` and ``.infer``.

    agent = LLMAgent(base_model="smollm2-135m-instruct")
    agent.infer("You are in a room with a door.", instruction="Escape. Act as 'Action: <act>'.")
    trajectory = agent.infer("babyai")          # one episode of a registered env (or a BaseEnv)

The model is loaded on first use through the configured engine plugin (``hf`` by default).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

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


class _Borrowed(BaseEnv):
    """Lends a caller's env instance to one episode without closing it."""

    def __init__(self, env: BaseEnv) -> None:
        self.env = env
        self.instruction = env.instruction  # type: ignore[misc]
        self.action_format = env.action_format  # type: ignore[misc]

    def reset(self, *, task_id: int | None = None, seed: int | None = None) -> str:
        return self.env.reset(task_id=task_id, seed=seed)

    def step(self, action: str) -> tuple[str, float, bool, dict]:
        return self.env.step(action)

    def splits(self) -> Any:
        return self.env.splits()


class LLMAgent:
    """An LLM acting in text environments; greedy by default (``temperature=0``)."""

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
        self.engine_options = engine_options
        self._engine: Any = None

    @property
    def engine(self) -> Any:
        if self._engine is None:
            from .plugins import get_plugin_manager

            cls = get_plugin_manager().registry("engines").load(self.engine_name)
            self._engine = cls(self.base_model, dtype=self.dtype, chat_template=self.chat_template, **self.engine_options)
        return self._engine

    def infer(
        self,
        observation_or_env: Any,
        *,
        instruction: Optional[str] = None,
        action_format: Optional[str] = None,
        task_id: int = 0,
        max_turns: Optional[int] = None,
    ) -> Any:
        """A :class:`Reply` to an observation string, or the :class:`Trajectory` of one episode of an env.

        An env is a ``BaseEnv`` instance or subclass, or the name of a registered env.
        """
        if isinstance(observation_or_env, str) and not _is_env_name(observation_or_env):
            return self._reply(observation_or_env, instruction or "", action_format or self.action_format or "free")
        return self._episode(observation_or_env, instruction, action_format, task_id, max_turns or self.max_turns)

    def train(
        self,
        env: str,
        method: str = "ScalingInter-RL",
        *,
        max_steps: int = 100,
        algorithm: str = "grpo",
        run_name: str = "agent",
        config: Optional[str] = None,
        **overrides: Any,
    ) -> dict[str, Any]:
        """Train on registered env *env* with the same components as ``agentgym train``; returns final metrics.

        *method* is ``ScalingInter-RL`` (horizon raised in stages) or an algorithm name (``GRPO``,
        ``PPO``, ``RLOO``, ``REINFORCE++``) with a fixed horizon; *overrides* are dotted config keys
        (``{"trainer.lr": 1e-5}``). Afterwards the agent acts with the trained weights.
        """
        from .config import build_component, load_config
        from .plugins import get_plugin_manager

        if not isinstance(env, str):
            raise AgentGymError("LLMAgent.train(env) takes the name of a registered env (e.g. 'babyai')")
        key = method.lower().replace("-", "").replace("_", "").replace("+", "p")
        algos = {"grpo": "grpo", "ppo": "ppo", "rloo": "rloo", "reinforcepp": "reinforce_pp", "reinforcepp2": "reinforce_pp"}
        items = {"run.name": run_name, "model.path": self.base_model, "model.dtype": self.dtype,
                 "model.max_context": self.max_context, "env.name": env, "trainer.name": "rl",
                 "trainer.steps": max_steps, "trainer.algorithm": algos.get(key, algorithm),
                 "scheduler.name": "scaling_inter" if key == "scalinginterrl" else "fixed"}
        if key != "scalinginterrl" and key not in algos:
            raise AgentGymError(f"unknown training method {method!r}; use ScalingInter-RL, GRPO, PPO, RLOO or REINFORCE++")
        if key != "scalinginterrl":
            items["scheduler.turns"] = self.max_turns
        items.update(overrides)
        manager = get_plugin_manager()
        cfg = load_config([config] if config else [], [f"{k}={v}" for k, v in items.items()], manager=manager)
        trainer = build_component(manager, "trainers", cfg.trainer, cfg, manager)
        metrics = trainer.fit()
        ckpt = getattr(trainer, "rd", None) and trainer.rd.latest_checkpoint()
        if ckpt is not None:  # act with the trained policy from now on
            self.close()
            self.base_model = str(ckpt)
        return metrics

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

    def _episode(self, env: Any, instruction: Optional[str], fmt: Optional[str], task_id: int, max_turns: int) -> Any:
        from .env.pool import LocalEnvPool
        from .rollout.runner import run_rollout

        if isinstance(env, str):
            from .env.serving import resolve_env

            cls, _ = resolve_env(env)
            name, factory = env, cls
        elif isinstance(env, type) and issubclass(env, BaseEnv):
            name, factory = env.__name__, env
        elif isinstance(env, BaseEnv):
            borrowed = _Borrowed(env)
            name, factory = type(env).__name__, (lambda: borrowed)
        else:
            raise AgentGymError(f"infer() takes an observation string, a BaseEnv or an env name, not {type(env).__name__}")
        pool = LocalEnvPool(factory, name=name)
        probe = factory()
        try:
            default_instruction, default_format = probe.instruction, probe.action_format
        finally:
            probe.close()
        trajectories = run_rollout(
            self.engine, pool, [(task_id, 0)], max_turns=max_turns,
            instruction=instruction if instruction is not None else default_instruction,
            action_format=fmt or self.action_format or default_format,
            agent_cfg={"system_prompt": self.system_prompt},
            rollout_cfg={"max_new_tokens": self.max_new_tokens, "max_episode_tokens": self.max_context},
            temperature=self.temperature, seed=self.seed, max_context=self.max_context,
            chat_template=self.chat_template, env_name=name,
        )
        return trajectories[0]


def _is_env_name(text: str) -> bool:
    if not text or any(c.isspace() for c in text):
        return False
    from .plugins import get_plugin_manager

    try:
        get_plugin_manager().registry("envs").get(text)
    except Exception:  # noqa: BLE001 - not a registered env: treat as an observation
        return False
    return True
