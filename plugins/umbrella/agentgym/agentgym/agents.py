"""The seed project's agent API: ``from agentgym.agents import LLMAgent`` is core's agent."""
from agentgym_core.agent_api import LLMAgent, Reply

__all__ = ["LLMAgent", "Reply"]
