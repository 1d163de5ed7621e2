"""A chat request as token ids, with the model's own earlier replies spliced in exactly as sampled.

An agent sends its whole conversation with every call. Re-tokenizing the assistant messages in it
would not give back the tokens the model sampled (retokenization drift), so the prompt would not
extend the previous call's prompt and reply, and the update would score replies the model never
wrote. Here every assistant message that is a reply this endpoint returned (same content, same
tool calls) is rendered as a sentinel, and the sentinel's place gets the sampled token ids; the
text between sentinels is tokenized as the chat template writes it, as the rollout loop does for
observation turns (:mod:`agentgym_core.rollout.chat`). An agent that keeps its history gets
prompts that extend each other token for token; an assistant message it wrote or edited itself
is plain context, rendered by the template.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from agentgym_core import ChatFormat
from agentgym_core.rollout.chat import sentinel

from .tools import RequestError, ToolCall, arguments_key, calls_as_text, choice_text, tools_text

log = logging.getLogger("agentgym.external")

_PROBE = "AGENTGYMPROBE"


@dataclass
class Completion:
    """One reply the endpoint returned: what the agent may send back, and the tokens it stands for."""

    index: int
    token_ids: list[int]
    #: The model produced the end-of-turn marker itself (the template's marker after it is not added again).
    eot_sampled: bool
    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)

    def key(self) -> tuple[str, tuple[tuple[str, str, Any], ...]]:
        return message_key(self.content, self.tool_calls)


def message_key(content: str | None, calls: list[ToolCall]) -> tuple[str, tuple[tuple[str, str, Any], ...]]:
    """What identifies an assistant message: its text and its calls (arguments compared as JSON)."""
    return content or "", tuple((c.id, c.name, arguments_key(c.arguments)) for c in calls)


@dataclass
class Prompt:
    ids: list[int]
    #: Indices of the completions spliced in, in order.
    spliced: list[int]


class PromptRenderer:
    """Renders OpenAI chat messages with *chat*'s template; see the module docstring."""

    def __init__(self, chat: ChatFormat) -> None:
        self.chat = chat
        tool = {"type": "function", "function": {"name": _PROBE, "description": "", "parameters": {}}}
        #: The template writes ``tools`` itself (else the schemas go into the system message).
        self.native_tools = _PROBE in (self._render_or_none([_user("u")], [tool]) or "")
        #: The template renders a ``tool`` message (else it becomes a user message).
        self.tool_role = _PROBE in (self._render_or_none([_user("u"), _assistant("a"), _tool(_PROBE)]) or "")
        calling = {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": _PROBE, "arguments": {}}}]}
        #: The template renders an assistant message's ``tool_calls`` (else they are written as text).
        self.native_calls = _PROBE in (self._render_or_none([_user("u"), calling]) or "")
        self._warned = False

    def _render_or_none(self, messages: list[dict[str, Any]], tools: list | None = None,
                        generation_prompt: bool = False) -> str | None:
        try:
            return self.render_text(messages, tools, generation_prompt)
        except Exception:  # noqa: BLE001 - a template that cannot render it: the feature is missing
            return None

    def render_text(self, messages: list[dict[str, Any]], tools: list | None, generation_prompt: bool = True) -> str:
        chat = self.chat
        kwargs: dict[str, Any] = {"chat_template": chat.chat_template} if chat.chat_template else {}
        if tools:
            kwargs["tools"] = tools
        return chat.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation_prompt,
                                                  **kwargs)

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], choice: Any,
               completions: list[Completion]) -> Prompt:
        """The token ids of the prompt for *messages* (from :func:`~agentgym_external.tools.normalize_messages`)."""
        matched = self.match(messages, completions)
        try:
            return self._splice(messages, tools, choice, completions, matched)
        except _Unspliceable as exc:
            if not self._warned:
                self._warned = True
                log.warning("the chat template does not render an assistant message where the conversation has it "
                            "(%s): earlier replies are re-tokenized from their text, so prompts may not extend the "
                            "previous call token for token (each such call is a training segment of its own)", exc)
            return self._splice(messages, tools, choice, completions, {})

    def match(self, messages: list[dict[str, Any]], completions: list[Completion]) -> dict[int, int]:
        """``{message index: completion index}`` for the assistant messages that are replies this endpoint returned."""
        by_key: dict[Any, list[Completion]] = {}
        for c in completions:
            by_key.setdefault(c.key(), []).append(c)
        matched, after = {}, -1
        for i, m in enumerate(messages):
            if m["role"] != "assistant":
                continue
            found = by_key.get(message_key(m["content"], m["tool_calls"]), [])
            pick = next((c for c in found if c.index > after), found[-1] if found else None)
            if pick is not None:
                matched[i], after = pick.index, pick.index
        return matched

    def _splice(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], choice: Any,
                completions: list[Completion], matched: dict[int, int]) -> Prompt:
        chat = self.chat
        rendered = self._template_messages(messages, tools, choice, matched)
        try:
            text = self.render_text(rendered, tools if tools and self.native_tools else None)
        except Exception as exc:  # noqa: BLE001 - templates raise anything
            roles = ", ".join(m["role"] for m in messages)
            raise RequestError(f"the model's chat template cannot render messages with roles [{roles}]: "
                               f"{type(exc).__name__}: {exc}", param="messages") from None
        order = [matched[i] for i in sorted(matched)]
        ids: list[int] = []
        rest = text
        previous: Completion | None = None
        for n, index in enumerate(order):
            head, found, rest = rest.partition(sentinel(n))
            if not found:
                raise _Unspliceable(f"reply {index} is missing from the render")
            if chat.history_lead and head.endswith(chat.history_lead):  # as the generation prompt opened it
                head = head[: len(head) - len(chat.history_lead)] + chat.prompt_lead
            elif chat.prompt_lead and not head.endswith(chat.prompt_lead):
                head += chat.prompt_lead
            ids += self._piece(head, previous)
            previous = completions[index]
            ids += previous.token_ids
        ids += self._piece(rest, previous)
        return Prompt(ids, order)

    def _piece(self, text: str, previous: Completion | None) -> list[int]:
        """Tokens of the text after a spliced reply (without the end-of-turn marker it sampled itself)."""
        eot = self.chat.eot_text
        if previous is not None and previous.eot_sampled and eot and text.startswith(eot):
            text = text[len(eot):]
        return self.chat.encode(text) if text else []

    def _template_messages(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], choice: Any,
                           matched: dict[int, int]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        n = 0
        for i, m in enumerate(messages):
            role = m["role"]
            if i in matched:
                out.append(_assistant(sentinel(n)))
                n += 1
            elif role == "assistant":
                calls = m["tool_calls"]
                if calls and self.native_calls:
                    out.append({"role": "assistant", "content": m["content"], "tool_calls": [
                        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": _object(c)}}
                        for c in calls]})
                else:
                    text = "\n".join(x for x in (m["content"], calls_as_text(calls)) if x)
                    out.append(_assistant(text))
            elif role == "tool":
                if self.tool_role:
                    out.append({k: v for k, v in m.items()})
                else:
                    out.append(_user(f"<tool_response>\n{m['content']}\n</tool_response>"))
            else:
                out.append({"role": role, "content": m["content"]})
        extra = (tools_text(tools, choice) if not self.native_tools else choice_text(choice)) if tools else ""
        if extra:
            if out and out[0]["role"] == "system":
                out[0] = {**out[0], "content": f"{out[0]['content']}\n\n{extra}" if out[0]["content"] else extra}
            elif self.chat.system_fold is None:
                out.insert(0, {"role": "system", "content": extra})
            else:
                first = next(k for k, m in enumerate(out) if m["role"] == "user")
                out[first] = {**out[first], "content": f"{extra}\n\n{out[first]['content']}"}
        return out


class _Unspliceable(Exception):
    pass


def _object(call: ToolCall) -> Any:
    import json

    try:
        return json.loads(call.arguments)
    except ValueError:
        return call.arguments


def _user(content: str) -> dict[str, Any]:
    return {"role": "user", "content": content}


def _assistant(content: str) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def _tool(content: str) -> dict[str, Any]:
    return {"role": "tool", "content": content, "tool_call_id": "call_0"}
