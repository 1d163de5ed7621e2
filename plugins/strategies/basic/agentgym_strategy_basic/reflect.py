"""``reflect``: Reflexion (Shinn et al. 2023). After a failed attempt at a task the agent writes a
short reflection, which goes into the prompt of its next attempt at the same task.

Each attempt is its own trajectory (``attempt`` 1, 2, ...; ``first_episode_id`` names the
first), in the task's group. The reflection is generated after the failed episode, in that
episode's own conversation (its messages as the model saw them, the oldest exchanges dropped
when the whole would not fit ``model.max_context``) followed by a user message saying how it
failed and :attr:`ReflectConfig.prompt`. It belongs to no trajectory: it is never trained.
The next attempt's first user message starts with :attr:`ReflectConfig.header` and the last
``memory`` reflections, then the usual first message; there it is context, with loss mask 0.
An attempt that succeeds, or fails on an env error (not the agent's doing), is the last.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentgym_core import ACTION, EpisodeBuilder, EpisodeLoop, Strategy, Task, Trajectory, check_range
from agentgym_core.rollout.strategy import conversation

#: How the failed attempt ended, said before the reflection prompt.
OUTCOMES = {
    "done": "The episode ended without solving the task.",
    "max_turns": "You ran out of steps before solving the task.",
    "max_tokens": "The episode grew too long before the task was solved.",
    "context": "The episode grew too long before the task was solved.",
    "max_generated": "You wrote too much before solving the task.",
}


@dataclass
class ReflectConfig:
    #: The most attempts at a task (1: no reflection, like the default strategy).
    attempts: int = 3
    #: Asks for the reflection, after the failed attempt's conversation and how it ended.
    prompt: str = ("In two or three sentences, say what went wrong and what you will do differently in your next "
                   "attempt. Do not give an action.")
    #: Starts the next attempt's first user message, followed by the reflections as a list.
    header: str = "Lessons from your earlier attempts at this task:"
    #: The most new tokens of a reflection.
    max_tokens: int = 96
    #: How many of the latest reflections the next attempt sees (Reflexion keeps 1-3).
    memory: int = 3

    def __post_init__(self) -> None:
        check_range("agent.strategy.attempts", self.attempts, ge=1)
        check_range("agent.strategy.max_tokens", self.max_tokens, ge=1)
        check_range("agent.strategy.memory", self.memory, ge=1)
        for key in ("prompt", "header"):
            if not str(getattr(self, key)).strip():
                raise ValueError(f"agent.strategy.{key} must be non-empty text")


class ReflectStrategy(Strategy):
    """Attempts with reflections in between (see the module docstring)."""

    name = "reflect"
    Config = ReflectConfig

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.max_attempts = self.config.attempts

    async def play(self, loop: EpisodeLoop, task: Task) -> list[Trajectory]:
        attempts: list[Trajectory] = []
        lessons: list[str] = []
        for n in range(1, self.config.attempts + 1):
            traj = loop.new_trajectory(task, attempt=n, first=attempts[0] if attempts else None)
            traj.memory = lessons[-self.config.memory:]
            builder = await loop.play(task, traj, self)
            attempts.append(traj)
            if traj.success or traj.failed or builder is None or n == self.config.attempts:
                break
            lesson = await self.reflect(loop, task, traj, builder)
            if lesson:
                lessons.append(lesson)
        return attempts

    def message(self, traj: Trajectory, text: str) -> tuple[str, str]:
        if not traj.turns and traj.memory:
            notes = "\n".join(f"- {m}" for m in traj.memory)
            return f"{self.config.header}\n{notes}\n\n{text}", ACTION
        return text, ACTION

    async def reflect(self, loop: EpisodeLoop, task: Task, traj: Trajectory, builder: EpisodeBuilder) -> str:
        """The reflection on the failed attempt *traj* (one paragraph; "" when none fits the context)."""
        messages = reflection_messages(traj, builder, self.config.prompt)
        limit = loop.context or loop.budget
        ids = _encode(loop, messages)
        # Drop the oldest exchanges (a reply and the observation after it) until there is room.
        first_user = next(i for i, m in enumerate(messages) if m["role"] == "user")
        while len(ids) + self.config.max_tokens > limit and len(messages) > first_user + 3:
            del messages[first_user + 1 : first_user + 3]
            ids = _encode(loop, messages)
        room = min(self.config.max_tokens, limit - len(ids))
        if room < 1:
            return ""
        result = await loop.generate(ids, max_new_tokens=room, order=task.index, stop_strings=loop.chat.stop_strings,
                                     seed=loop.derive_seed(task.index, "reflect", traj.attempt))
        text, _ = loop.chat.split_reply(result.token_ids)
        return " ".join(text.split())


def reflection_messages(traj: Trajectory, builder: EpisodeBuilder, prompt: str) -> list[dict[str, Any]]:
    """The failed episode's conversation, then how it ended and *prompt* as the last user message."""
    messages = conversation(builder)
    ask = f"{OUTCOMES.get(traj.end_reason, OUTCOMES['done'])}\n\n{prompt}"
    if messages[-1]["role"] == "user":  # it ended on an observation (out of turns)
        messages[-1] = {"role": "user", "content": f"{messages[-1]['content']}\n\n{ask}"}
    else:  # it ended on a reply: what the env answered to it, then the question
        last = traj.turns[-1].observation if traj.turns else ""
        messages.append({"role": "user", "content": f"{last}\n\n{ask}" if last else ask})
    return messages


def _encode(loop: EpisodeLoop, messages: list[dict[str, Any]]) -> list[int]:
    return loop.chat.encode(loop.chat.render(messages, add_generation_prompt=True))
