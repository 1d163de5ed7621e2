"""AgentGym under the seed project's import path.

    from agentgym.envs import BabyAIEnv          # envs by class name, imported on demand
    from agentgym.agents import LLMAgent

    agent = LLMAgent(base_model="smollm2-135m-instruct")
    agent.train(BabyAIEnv, method="ScalingInter-RL", max_steps=100)
    agent.infer()                                 # one episode of the trained env

Importing this package imports nothing else: ``agentgym.envs`` finds env classes through the
plugin registry; ``agentgym.agents`` holds ``LLMAgent`` (its run configs: ``agentgym.training``).
The distribution is ``agentgym-rl`` (the name ``agentgym`` on PyPI is an unrelated project).
"""
from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("agentgym-rl")
except _metadata.PackageNotFoundError:  # imported from a source tree without being installed
    __version__ = "0.0.0"
