"""What an external agent is given for one episode: the endpoint, its key, the task and an env session.

A function agent receives an :class:`AgentTask`; a command agent finds the same in its
environment variables (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``AGENTGYM_TASK``) and gets it
with :func:`connect`. ``task.env`` steps the episode's env session: in the process running the
rollout (:class:`EnvSession`) or, for a command, through the endpoint (:class:`RemoteEnvSession`).
Either way the steps are recorded beside the model calls, and the env ends the episode as it
ends one of the rollout loop's: ``done``, or ``max_turns`` steps (the last one then reads
``done=True`` with ``info["truncated"] = "max_turns"``).
"""
from __future__ import annotations

import asyncio
import json
import os
from dataclasses import asdict, dataclass, field, fields
from typing import Any

#: Environment variables a command agent gets (besides the OpenAI client's own two).
TASK_ENV = "AGENTGYM_TASK"
RESULT_ENV = "AGENTGYM_RESULT"


class EpisodeOver(RuntimeError):
    """A step after the env ended the episode (done, or ``max_turns`` steps)."""


@dataclass
class StepResult:
    observation: str
    reward: float
    done: bool
    info: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def __iter__(self):  # obs, reward, done, info = env.step(action), as with a BaseEnv
        return iter((self.observation, self.reward, self.done, self.info))


class EnvSession:
    """The episode's env session, stepped from the agent's code (see the module docstring).

    ``step`` is for code running in a thread of its own (a plain function agent); ``astep`` for a
    coroutine agent, which runs on the rollout's event loop.
    """

    def __init__(self, pool: Any, session: str, loop: asyncio.AbstractEventLoop, *, max_turns: int,
                 record: Any) -> None:
        self.pool, self.session, self.loop = pool, session, loop
        self.max_turns = max_turns
        self._record = record
        self.steps = 0
        self.done = False
        self.truncated = False
        #: The env's failure, if a step raised (the episode then fails with ``env_error``).
        self.error: BaseException | None = None
        self._lock = asyncio.Lock()

    async def astep(self, action: str) -> StepResult:
        async with self._lock:  # one step at a time, numbered: a retried step applies once
            if self.done:
                why = "max_turns steps were taken" if self.truncated else "the env said done"
                raise EpisodeOver(f"the episode is over ({why}); no more steps")
            self.steps += 1
            try:
                obs, reward, done, info = await self.pool.step(self.session, str(action), self.steps)
            except Exception as exc:  # the env failed: the episode fails as one of the rollout loop's would
                self.error = self.error or exc
                self.done = True
                raise
            self._record(str(action), obs, float(reward), bool(done), dict(info))
            self.done = bool(done)
            if not done and self.steps >= self.max_turns:
                self.done = self.truncated = True
                info = {**info, "truncated": "max_turns"}
            return StepResult(obs, float(reward), self.done, dict(info))

    async def astep_anywhere(self, action: str) -> StepResult:
        """:meth:`astep` from any event loop (the endpoint's, for a command agent)."""
        from .server import call_in

        return await call_in(self.loop, self.astep(action))

    def step(self, action: str) -> StepResult:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            raise RuntimeError("EnvSession.step() blocks, and this code runs on the rollout's event loop: in an "
                               "async agent use `await task.env.astep(action)`")
        return asyncio.run_coroutine_threadsafe(self.astep(action), self.loop).result()


class RemoteEnvSession:
    """The episode's env session for a command agent, through the policy endpoint (``/agentgym/env/step``)."""

    def __init__(self, base_url: str, api_key: str, timeout: float = 300.0) -> None:
        self.url = base_url.rstrip("/").removesuffix("/v1") + "/agentgym/env/step"
        self.api_key, self.timeout = api_key, timeout
        self.done = False

    def step(self, action: str) -> StepResult:
        import httpx

        resp = httpx.post(self.url, json={"action": action}, timeout=self.timeout,
                          headers={"authorization": f"Bearer {self.api_key}"})
        data = resp.json()
        if resp.status_code != 200:
            message = (data.get("error") or {}).get("message", resp.text) if isinstance(data, dict) else resp.text
            if "EpisodeOver" in message:
                raise EpisodeOver(message)
            raise RuntimeError(f"env step failed ({resp.status_code}): {message}")
        result = StepResult(**data)
        self.done = result.done
        return result


@dataclass
class AgentTask:
    """One episode for an external agent."""

    #: The OpenAI-compatible endpoint (``.../v1``) and this episode's key: ``OpenAI(base_url=..., api_key=...)``.
    base_url: str
    api_key: str
    model: str
    episode_id: str
    task_id: int
    env_name: str
    #: The env's instruction (what the task is, the actions, the action format).
    instruction: str
    #: The env's first observation for this task.
    observation: str
    #: ``react``, ``tags`` or ``free``: how the env's instruction asks for actions.
    action_format: str
    #: The most env steps the episode may take (the scheduler's horizon).
    max_turns: int
    #: The system message and first user message the rollout loop would start this episode with
    #: (``agent.system_prompt``, the instruction where ``agent.instruction_position`` puts it).
    system: str = ""
    first_message: str = ""
    env: Any = None

    def messages(self) -> list[dict[str, str]]:
        """The rollout loop's opening messages for this task (an agent may start from them, or not)."""
        head = [{"role": "system", "content": self.system}] if self.system else []
        return head + [{"role": "user", "content": self.first_message}]

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "env"}

    def environ(self) -> dict[str, str]:
        """The environment variables a command agent gets."""
        return {"OPENAI_BASE_URL": self.base_url, "OPENAI_API_KEY": self.api_key,
                TASK_ENV: json.dumps(self.to_json())}


def connect() -> AgentTask:
    """The task of the episode this process was started for (a command agent), its env session included."""
    raw = os.environ.get(TASK_ENV)
    if not raw:
        raise RuntimeError(f"{TASK_ENV} is not set: this process was not started by an `external` agent's command")
    task = AgentTask(**json.loads(raw))
    task.env = RemoteEnvSession(task.base_url, task.api_key)
    return task


def write_result(value: Any) -> None:
    """Report the episode's reward from a command agent (a number, a bool or ``{"reward", "success"}``)."""
    path = os.environ.get(RESULT_ENV)
    if not path:
        raise RuntimeError(f"{RESULT_ENV} is not set: this process was not started by an `external` agent's command")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f)
