"""An agent that restructures its history between calls: after every step it replaces the conversation so far
with a short summary. Its prompts no longer extend each other, so each call after the first is a training segment
of its own, scored under exactly the prompt it was sampled from (nothing is re-rendered)."""
from __future__ import annotations

from openai import OpenAI


def solve(task) -> None:
    client = OpenAI(base_url=task.base_url, api_key=task.api_key)
    opening = task.messages()
    messages = list(opening)
    seen: list[str] = []
    for _ in range(task.max_turns):
        content = client.chat.completions.create(model=task.model, messages=messages).choices[0].message.content
        observation, _, done, _ = task.env.step(content or "")
        if done:
            return None
        seen.append(f"- you did {(content or '').strip()[:60]!r} and saw: {observation.strip()[:200]}")
        # a fresh prompt: the opening, then a summary of everything since (not the replies themselves)
        messages = opening + [{"role": "assistant", "content": "(earlier steps summarised below)"},
                              {"role": "user", "content": "What happened so far:\n" + "\n".join(seen)
                               + "\nWhat is your next action?"}]
    return None
