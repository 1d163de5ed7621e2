"""Train agents written elsewhere: an OpenAI-compatible policy endpoint that records every token.

An agent function gets an :class:`AgentTask` (endpoint URL, key, task, env session); a command
agent calls :func:`connect` for the same and :func:`write_result` to report a reward.
"""
from .task import AgentTask, EpisodeOver, StepResult, connect, write_result

__all__ = ["AgentTask", "EpisodeOver", "StepResult", "connect", "write_result"]
