"""Conversations in the chat-messages format, rendered and tokenised exactly as the RL agent does.

A demonstration is the conversation the agent would have had if it had written the expert's
actions: the same system text and first user message (``agent.instruction_position``,
``agent.system_prompt``, the env's instruction), every reply in the env's action format, every
observation a user message. :func:`encode_conversation` turns such a conversation into token
ids and a loss mask with the rollout's own code (:class:`~agentgym_core.rollout.chat.ChatFormat`
and :class:`~agentgym_core.rollout.episode.EpisodeBuilder`), so supervised training sees the
token sequence a rollout of the same conversation holds: loss on the reply tokens and the
end-of-turn marker the model must learn to write, nothing else.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .errors import AgentGymError
from .rollout.actions import check_format, parse_action


class ConversationError(AgentGymError):
    """A conversation cannot be rendered or trained on (bad roles, an action that does not parse back)."""


def agent_prompt(instruction: str, agent: Any, first_observation: str) -> tuple[str, str]:
    """``(system text, first user message)`` the agent starts an episode with, for *agent*
    (:class:`~agentgym_core.assembly.AgentSettings`): where the instruction goes is
    ``agent.instruction_position``; ``agent.system_prompt`` comes first. The rollout's episode loop
    does the same (tests compare the two token for token)."""
    position, prompt = agent.instruction_position, agent.system_prompt
    if position == "system":
        system = instruction if not prompt else f"{prompt}\n\n{instruction}"
        return system, first_observation
    user = (f"{instruction}\n\n{first_observation}" if position == "before_observation"
            else f"{first_observation}\n\n{instruction}")
    return prompt or "", user


def reply_text(action: str, action_format: str) -> str:
    """The reply an agent writes for *action* in *action_format*: ``free`` the action itself, ``react``
    ``Action: <action>``, ``tags`` the action (already a tag such as ``<search>q</search>``).

    The reply must parse back to exactly *action*, the same text the env received from the expert;
    otherwise the agent could not have written it and the error says why.
    """
    fmt = check_format(action_format)
    reply = f"Action: {action}" if fmt == "react" else action
    parsed, error = parse_action(reply, fmt)
    if parsed != action:
        why = error or f"it parses as {parsed!r}"
        raise ConversationError(f"the expert's action {action!r} cannot be written as a {fmt} reply ({why}); in "
                                f"{fmt} format an action must {_RULES[fmt]}")
    return reply


_RULES = {
    "react": "fit on one line, without leading or trailing spaces",
    "tags": "be one tag such as <search>query</search>",
    "free": "be non-empty without leading or trailing whitespace",
}


def episode_messages(instruction: str, agent: Any, action_format: str, first_observation: str,
                     steps: Sequence[Any]) -> list[dict[str, str]]:
    """The conversation of an episode whose replies were *steps*' actions (``.action``, ``.observation``):
    system (when there is system text), user, then assistant / user pairs; it ends on the last reply."""
    system, user = agent_prompt(instruction, agent, first_observation)
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]
    for i, step in enumerate(steps):
        messages.append({"role": "assistant", "content": reply_text(step.action, action_format)})
        if i + 1 < len(steps):
            messages.append({"role": "user", "content": step.observation})
    return messages


def check_messages(messages: Any, where: str = "conversation") -> list[dict[str, str]]:
    """*messages* as a list of ``{role, content}``: an optional system message, then user and assistant
    in turn, starting with user and ending with assistant. Raises naming what is wrong and where."""
    if not isinstance(messages, list) or not messages:
        raise ConversationError(f"{where}: 'messages' must be a non-empty list of {{role, content}}")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
            raise ConversationError(f"{where}: message {i} must be {{\"role\": ..., \"content\": \"text\"}}, got {m!r:.120}")
        out.append({"role": m["role"], "content": m["content"]})
    roles = [m["role"] for m in out]
    body = roles[1:] if roles[0] == "system" else roles
    expected = ["user" if i % 2 == 0 else "assistant" for i in range(len(body))]
    if body != expected or not body or body[-1] != "assistant":
        raise ConversationError(
            f"{where}: roles are [{', '.join(roles)}]; an agent conversation is an optional system message, then "
            "user and assistant in turn, starting with user and ending with an assistant reply")
    return out


def encode_conversation(chat: Any, messages: Sequence[dict[str, str]]) -> tuple[list[int], list[int]]:
    """``(token_ids, loss_mask)`` of *messages* (see :func:`check_messages`) under *chat*
    (a :class:`~agentgym_core.rollout.chat.ChatFormat`), built by the rollout's episode builder:
    the prompt and every user turn as the template renders them (mask 0), each reply as its
    content's tokens followed by the end-of-turn marker (mask 1), as a model that wrote the reply
    and stopped would have produced them."""
    from .engine import GenerationResult
    from .rollout.episode import EpisodeBuilder
    from .rollout.trajectory import Trajectory

    messages = check_messages(list(messages))
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    body = messages[1:] if messages[0]["role"] == "system" else messages
    traj = Trajectory(episode_id="sft", env_name="", task_id=0, group_id=0, token_ids=[], loss_mask=[], logprobs=[],
                      prompt_len=0)
    builder = EpisodeBuilder(chat, traj, system=system, first_observation=body[0]["content"])
    end = [chat.eot_id] if chat.eot_id is not None else chat.encode(chat.eot_text) if chat.eot_text else []
    for i in range(1, len(body), 2):
        ids = chat.encode(body[i]["content"]) + end
        builder.add_reply(GenerationResult(ids, [0.0] * len(ids), "stop", 0))
        if i + 1 < len(body):
            builder.observation_delta(body[i + 1]["content"])
            builder.commit_observation()
    builder.close_reply()
    return list(traj.token_ids), [int(m) for m in traj.loss_mask]
