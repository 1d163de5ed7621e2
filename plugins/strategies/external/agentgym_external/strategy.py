"""The ``external`` strategy: episodes played by an agent written elsewhere, through the policy endpoint.

Why a strategy (and not a new kind of agent): a strategy already decides how the episodes of a
task are played and hands back token-exact trajectories, and it gets everything an external
agent needs from the episode loop (the engine's batcher, the env pool, the chat template, the
sampling settings, the budgets and the horizon). So ``agent.strategy: {name: external, agent:
my_pkg.agent:solve}`` trains, evaluates and rolls out with ``agentgym train / eval / rollout``
unchanged, batches its calls with every other episode's, and its failures are counted where env
failures are.

Per episode: open an env session and reset it to the task, open an episode on the endpoint with
a key of its own, run the user's agent with the endpoint's URL, the key, the task and the env
session (:mod:`agentgym_external.runner`), then turn the recorded calls into the trajectory
(:mod:`agentgym_external.trace`). The reward: the env's (``done`` and its success, as for the
rollout loop), the agent's return value, or -- with ``reward: none`` -- only the run's reward
plugins, which can read the final transcript (``Trajectory.transcript``). A timeout or crash of
the agent fails the episode (``failed``, out of every baseline and loss), never the run; an engine
failure fails the run, as in the rollout loop.
"""
from __future__ import annotations

import asyncio
import atexit
import logging
import threading
from dataclasses import dataclass
from typing import Any, Optional

from agentgym_core import EpisodeLoop, Strategy, Task, Trajectory, check_range

from .episode import Limits, PolicyEpisode, Sampling
from .prompt import PromptRenderer
from .runner import AgentCrashed, AgentTimeout, command_argv, interpret, load_agent, run_agent
from .server import PolicyServer, call_in
from .task import AgentTask, EnvSession

REWARDS = ("auto", "env", "return", "none")
log = logging.getLogger("agentgym.external")


class ExternalStrategy(Strategy):
    """Plays each task's episode with the user's agent; see the module docstring."""

    @dataclass
    class Config:
        #: The agent: ``package.module:function`` or ``path/to/file.py:function`` (from Python, the function
        #: itself), called with an :class:`~agentgym_external.task.AgentTask` per episode; a plain function
        #: runs in a thread of its own, a coroutine function on the rollout's event loop.
        agent: Optional[Any] = None
        #: Or a command run per episode (a string split as a shell would, or a list), which finds the
        #: endpoint in ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` and the task in ``AGENTGYM_TASK``.
        command: Optional[Any] = None
        #: Seconds one episode may take; past it the episode fails (``agent_timeout``).
        timeout: float = 300.0
        #: ``env`` (the env's success and rewards), ``return`` (the agent's return value), ``auto`` (the
        #: return value when there is one, else the env), ``none`` (only the run's reward plugins).
        reward: str = "auto"
        #: Sample with the request's ``temperature``/``top_p``/``seed`` instead of the rollout's.
        request_sampling: bool = False
        #: The most model calls in one episode (0: only the token budgets bound them).
        max_calls: int = 0
        #: Where the endpoint listens (port 0: a free port).
        host: str = "127.0.0.1"
        port: int = 0
        #: The model name ``/v1/models`` lists (requests may name any).
        model_name: str = "agentgym-policy"

        def __post_init__(self) -> None:
            if (self.agent is None) == (self.command is None):
                raise ValueError("agent.strategy (external) needs exactly one of agent: 'pkg.module:function' "
                                 "or command: 'program args...'")
            if self.reward not in REWARDS:
                raise ValueError(f"agent.strategy.reward must be one of {', '.join(REWARDS)}, got {self.reward!r}")
            check_range("agent.strategy.timeout", self.timeout, gt=0, note="seconds per episode")
            check_range("agent.strategy.max_calls", self.max_calls, ge=0, note="0: no bound")

    name = "external"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        c = self.config
        # a function itself is fine from Python (local_parts(..., strategy=ExternalStrategy(agent=solve)))
        self.agent = c.agent if callable(c.agent) else load_agent(c.agent) if c.agent is not None else None
        self.command = command_argv(c.command) if c.command is not None else None
        self.server: PolicyServer | None = None
        self._renderers: dict[int, PromptRenderer] = {}
        self._lock = threading.Lock()
        #: Agent threads still running after their episode timed out (they cannot be stopped).
        self.abandoned = 0
        self._told = False

    def endpoint(self) -> PolicyServer:
        """The policy endpoint, started on first use and kept for the process (one port for the run)."""
        with self._lock:
            if self.server is None:
                server = PolicyServer(self.config.model_name, host=self.config.host, port=self.config.port)
                server.start()
                atexit.register(server.stop)
                self.server = server
            return self.server

    def renderer(self, loop: EpisodeLoop) -> PromptRenderer:
        key = id(loop.chat)
        if key not in self._renderers:
            self._renderers = {key: PromptRenderer(loop.chat)}
        return self._renderers[key]

    async def play(self, loop: EpisodeLoop, task: Task) -> list[Trajectory]:
        if loop.context_policy.name != "full" and not self._told:
            self._told = True
            log.warning("agent.context / agent.history_window (%s) do not apply to an external agent: it sends the "
                        "prompts it chooses, and each call is trained under exactly the prompt it sent",
                        loop.context_policy.describe())
        traj = loop.new_trajectory(task)
        server = self.endpoint()
        session = None
        try:
            try:
                session = await loop.pool.create()
                first = await loop.pool.reset(session, traj.task_id)
            except Exception as exc:  # noqa: BLE001 - one bad env session fails one episode
                _fail(traj, "env_error", f"env create/reset failed: {type(exc).__name__}: {exc}")
                return [traj]
            await self._episode(loop, task, traj, server, session, first)
        finally:
            if session is not None:
                try:
                    await loop.pool.close(session)
                except Exception:  # noqa: BLE001 - the episode is over; a failed close must not lose it
                    pass
            loop.engine.release(traj.episode_id)
        return [traj]

    async def _episode(self, loop: EpisodeLoop, task: Task, traj: Trajectory, server: PolicyServer, session: str,
                       first: str) -> None:
        here = asyncio.get_running_loop()
        extra = () if traj.attempt == 1 else (traj.attempt,)

        async def generate(request: Any) -> Any:  # runs on the endpoint's loop; the batcher lives on ours
            return await call_in(here, loop.batcher.generate(request, order=task.index))

        episode = PolicyEpisode(
            traj.episode_id, self.renderer(loop), generate,
            limits=Limits(max_new_tokens=int(loop.params["max_new_tokens"]), max_episode_tokens=loop.budget,
                          max_generated_tokens=loop.generated_budget, max_context=loop.context,
                          max_calls=self.config.max_calls),
            sampling=Sampling(temperature=loop.temperature, top_p=float(loop.params["top_p"]),
                              stop_strings=loop.chat.stop_strings, stop_token_ids=loop.chat.stop_token_ids,
                              from_request=self.config.request_sampling),
            seed_for=lambda call: loop.derive_seed(task.index, call, *extra))
        env = EnvSession(loop.pool, session, here, max_turns=loop.max_turns, record=episode.record_step)
        episode.task = AgentTask(
            base_url=f"{server.url}/v1", api_key=episode.key, model=self.config.model_name,
            episode_id=traj.episode_id, task_id=traj.task_id, env_name=loop.env_name, instruction=loop.instruction,
            observation=first, action_format=loop.format, max_turns=loop.max_turns, system=loop.system,
            first_message=loop.first_message(first), env=env)
        server.open(episode)
        outcome: Any = None
        problem: tuple[str, str] | None = None
        try:
            outcome = await run_agent(self.agent, self.command, episode.task, self.config.timeout)
        except AgentTimeout as exc:
            problem = ("agent_timeout", str(exc))
            self.abandoned += self.command is None
        except AgentCrashed as exc:
            problem = ("agent_error", f"the agent failed: {exc}")
        finally:
            server.close(episode.key)
        if episode.engine_error is not None:  # as in the rollout loop: the engine failing fails the run
            raise episode.engine_error
        episode.fill(traj)
        self._finish(traj, episode, env, outcome, problem)

    def _finish(self, traj: Trajectory, episode: PolicyEpisode, env: EnvSession, outcome: Any,
                problem: tuple[str, str] | None) -> None:
        """Set the trajectory's outcome: end reason, success and score, or the failure."""
        if env.error is not None:
            _fail(traj, "env_error", f"env step {env.steps} failed: {type(env.error).__name__}: {env.error}")
            return
        over = env.done or episode.end_reason is not None  # the env or a budget ended it before the agent did
        if problem is not None and (problem[0] == "agent_timeout" or not over):
            _fail(traj, *problem)
            return
        if not traj.turns:
            _fail(traj, "agent_error", "the agent made no call to the policy endpoint: nothing to train on "
                                       f"(it was given base_url={episode.task.base_url} and its key)")
            return
        if env.done:
            traj.end_reason = "max_turns" if env.truncated else "done"
        else:
            traj.end_reason = episode.end_reason or "returned"
        last = episode.steps[-1] if episode.steps else None
        env_success = bool(last and last.done and last.info.get("success", last.reward > 0))
        mode = self.config.reward
        if mode == "auto":
            mode = "return" if outcome is not None else "env"
        if mode == "return":
            try:
                traj.score, traj.success = interpret(outcome)
            except AgentCrashed as exc:
                _fail(traj, "agent_error", str(exc))
        elif mode == "env":
            traj.success = env_success


def _fail(traj: Trajectory, reason: str, error: str) -> None:
    traj.failed = True
    traj.end_reason = reason
    traj.error = error
