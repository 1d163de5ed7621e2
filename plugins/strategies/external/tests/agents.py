"""Agents written the way users write them: loops over the real ``openai`` client, knowing nothing of AgentGym's
internals. The tests run them through the ``external`` strategy (a function, or this file as a command)."""
from __future__ import annotations

import sys
import time
from pathlib import Path

from openai import OpenAI

from agentgym_core.testing import load_script


def client(task):
    return OpenAI(base_url=task.base_url, api_key=task.api_key, max_retries=0, timeout=120)


#: What the rollout loop does, written against the API (the benchmark's control arm).
loop_agent = load_script(Path(__file__).parents[4] / "bench" / "external_agent.py", "external_bench_agent").loop_agent


def summarizing_agent(task):
    """Restructures its history: after the first exchange it replaces it with a summary (a new segment)."""
    api = client(task)
    messages = task.messages()
    first = api.chat.completions.create(model=task.model, messages=messages).choices[0].message.content
    observation, _, done, _ = task.env.step(first.strip() or "wait")
    summary = [messages[0], {"role": "user", "content": f"So far you tried one thing and saw: {observation}"}]
    second = api.chat.completions.create(model=task.model, messages=summary).choices[0].message.content
    summary += [{"role": "assistant", "content": second}, {"role": "user", "content": "Go on."}]
    api.chat.completions.create(model=task.model, messages=summary)
    return 1.0 if task.task_id % 2 == 0 else 0.0


def echo_agent(task):
    """Three calls of its own conversation, every message naming its episode (to check for cross-talk)."""
    api = client(task)
    messages = [{"role": "user", "content": f"I am episode {task.episode_id}."}]
    for k in range(3):
        content = api.chat.completions.create(model=task.model, messages=messages, max_tokens=4).choices[0].message.content
        messages += [{"role": "assistant", "content": content}, {"role": "user", "content": f"turn {k} of {task.episode_id}"}]
    return {"reward": float(task.task_id % 2)}


def hanging_agent(task):
    """Makes one call, then never returns."""
    client(task).chat.completions.create(model=task.model, messages=task.messages(), max_tokens=2)
    time.sleep(3600)


def crashing_agent(task):
    client(task).chat.completions.create(model=task.model, messages=task.messages(), max_tokens=2)
    raise ValueError("the agent's own bug")


if __name__ == "__main__":  # the command form: the task comes from the environment
    from agentgym_external import connect, write_result

    task = connect()
    mode = sys.argv[1] if len(sys.argv) > 1 else "loop"
    if mode == "hang":
        hanging_agent(task)
    elif mode == "crash":
        crashing_agent(task)
    else:
        loop_agent(task)
        write_result({"reward": 0.5, "success": True})
