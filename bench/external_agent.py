"""The rollout loop's own conversation, written as an agent on the ``openai`` client: the control arm of the
external-agent benchmark (docs/BENCHMARKS.md, "Agents written elsewhere").

It sends what the rollout loop would (the opening messages, each reply kept as returned, the env's observation
as the next user message, the loop's hint when a reply has no action), so a run that trains it through the
policy endpoint is comparable with -- and, with ``rollout.lockstep``, samples the same tokens as -- the same
config trained through the loop:

    agentgym train -c configs/quickstart.yaml agent.strategy.name=external \
        agent.strategy.agent=bench/external_agent.py:loop_agent
"""
from __future__ import annotations

from openai import OpenAI

from agentgym_core.rollout.actions import parse_action, parse_error_observation


def loop_agent(task) -> None:
    client = OpenAI(base_url=task.base_url, api_key=task.api_key, max_retries=0, timeout=3600)  # a busy CPU can take minutes per batch
    messages = task.messages()
    for _ in range(task.max_turns):
        content = client.chat.completions.create(model=task.model, messages=messages).choices[0].message.content
        action, error = parse_action(content, task.action_format)
        if error is not None:  # no action in the reply: the loop's hint, no env step
            observation, done = parse_error_observation(error, task.action_format), False
        else:
            observation, _, done, _ = task.env.step(action)
        if done:
            return None
        messages += [{"role": "assistant", "content": content}, {"role": "user", "content": observation}]
    return None
