"""An agent written with the ``openai`` client: a multi-turn tool-calling loop, nothing AgentGym-specific in it
but the task it is handed (where to call the model, and an env to act in).

The same function runs against any OpenAI-compatible server. AgentGym trains it unchanged: the ``external``
strategy points ``base_url`` at the policy being trained, records every token of every call, and turns the
episode into a trajectory (examples/openai_agent/README.md).
"""
from __future__ import annotations

import json

from openai import OpenAI

TOOLS = [{
    "type": "function",
    "function": {
        "name": "act",
        "description": "Take one action in the environment and see what happens.",
        "parameters": {"type": "object", "properties": {"action": {"type": "string", "description": "the action"}},
                       "required": ["action"]},
    },
}]


def solve(task) -> None:
    """Play one episode: call the model, run its tool calls in the env, feed the results back, until done."""
    client = OpenAI(base_url=task.base_url, api_key=task.api_key)
    messages = task.messages()  # the env's instruction and first observation
    for _ in range(task.max_turns):
        reply = client.chat.completions.create(model=task.model, messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))  # the assistant message, as the API gave it
        if message.tool_calls:
            for call in message.tool_calls:
                action = _action(call.function.arguments)
                observation, _, done, _ = task.env.step(action)
                if done:
                    return None
                messages.append({"role": "tool", "tool_call_id": call.id, "content": observation})
        else:  # small models often just say what they do: take the reply itself as the action
            observation, _, done, _ = task.env.step(message.content or "")
            if done:
                return None
            messages.append({"role": "user", "content": observation})
    return None  # the reward comes from the env (success when it says done and succeeded)


def _action(arguments: str) -> str:
    try:
        return str(json.loads(arguments).get("action", ""))
    except (ValueError, AttributeError):
        return arguments
