"""Agent strategies: how the episodes of one task are played on top of the episode loop.

A strategy is a component like a scheduler: registered by name through the
``register_strategies`` hook, selected by ``agent.strategy`` in a run config, its options a
``Config`` dataclass. The base class is the default strategy, the loop AgentGym always had:
one episode per task, every reply an action. A strategy changes that in two places:

* :meth:`Strategy.play` drives the attempts at one task: it asks the
  :class:`~agentgym_core.rollout.loop.EpisodeLoop` for a trajectory per attempt and plays it
  (Reflexion plays again after a failure, with a reflection in the next prompt);
* :meth:`Strategy.message` writes each user message of an episode and says what kind of reply
  it asks for: an action (parsed, sent to the env), or a kind of the strategy's own (``plan``:
  kept in the episode, answered by :meth:`Strategy.follow_up` instead of the env).

Every attempt is its own token-exact :class:`~agentgym_core.rollout.Trajectory`
(``attempt``, ``first_episode_id`` link them). What a strategy puts into a user message is
context with loss mask 0; every reply the model generates in an episode, a plan included, has
loss mask 1 there.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..options import config_from
from .loop import ACTION, EpisodeLoop, Task
from .trajectory import Trajectory, Turn

if TYPE_CHECKING:
    from .episode import EpisodeBuilder

__all__ = ["ACTION", "EpisodeLoop", "Strategy", "Task"]


class Strategy:
    """Plays one episode per task, every reply an action (the ``default`` strategy).

    Subclasses override :meth:`play` (attempts), :meth:`message` / :meth:`follow_up` /
    :meth:`reply_tokens` (replies that are not actions), and set :attr:`max_attempts` and
    :attr:`keep_in_context`. A subclass takes its ``Config`` fields as keyword arguments.
    """

    @dataclass
    class Config:
        pass

    #: The name it is registered under (evaluation summaries record it).
    name: str = "default"
    #: The most trajectories :meth:`play` returns for one task (evaluation reports success by
    #: each attempt up to this many).
    max_attempts: int = 1
    #: Reply kinds whose latest turn stays in the model's prompt under ``agent.history_window``.
    keep_in_context: tuple[str, ...] = ()

    def __init__(self, **options: Any) -> None:
        self.config = config_from(self, options)


    async def play(self, loop: EpisodeLoop, task: Task) -> list[Trajectory]:
        """The attempts at *task*, in order (the last one is the result)."""
        traj = loop.new_trajectory(task)
        await loop.play(task, traj, self)
        return [traj]

    def message(self, traj: Trajectory, text: str) -> tuple[str, str]:
        """The user message for *text* and the kind of reply it asks for.

        *text* is the first observation with the instruction (``traj.turns`` empty), an
        action's observation, or :meth:`follow_up`'s text after a reply of the strategy's own
        kind. Returns ``(message, ACTION)`` or ``(message, kind)``.
        """
        return text, ACTION

    def follow_up(self, traj: Trajectory, turn: Turn) -> str:
        """What the user says after a reply of kind ``turn.kind`` (not an action)."""
        raise NotImplementedError(f"strategy {self.name} asked for a {turn.kind!r} reply but has no follow_up")

    def reply_tokens(self, kind: str) -> int:
        """The most new tokens of a reply of *kind* (not an action: those get ``rollout.max_new_tokens``)."""
        raise NotImplementedError(f"strategy {self.name} asked for a {kind!r} reply but has no reply_tokens")


def conversation(builder: EpisodeBuilder) -> list[dict[str, str]]:
    """The episode's messages as the model saw them (system, user, assistant, ...), every reply as its
    message content; ends with the last reply when the episode ended on one. For strategies that
    build a prompt from a played episode (a reflection)."""
    messages = [dict(m) for m in builder.messages]
    replied = sum(1 for m in messages if m["role"] == "assistant")
    if len(builder.contents) > replied:
        messages.append({"role": "assistant", "content": builder.contents[-1]})
    return messages
