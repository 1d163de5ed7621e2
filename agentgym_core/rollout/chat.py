"""Chat-template rendering as token deltas, so an episode is built by appending, never re-encoding.

The model's own template (or ``model.chat_template``) renders every message. Past assistant
turns are kept exactly as sampled: to find what the template puts *after* an assistant turn
(its end-of-turn marker, the next observation turn and the generation prompt), the
conversation is rendered with a sentinel in place of each assistant reply and the text after
the last sentinel is the delta. The text before it must equal the previous render (prefix
stability), up to the assistant turn's opening, which may differ between the generation
prompt and a rendered history turn (Mistral's space before a reply, DeepSeek-R1's
``<think>`` in the generation prompt only). When a template breaks that, the delta is taken
from a minimal render instead, a warning says where the text changed and the trajectory is
flagged ``template_fallback``. Templates without a system role (Gemma) get the system text at
the start of the first user message.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

from ..errors import AgentGymError

log = logging.getLogger("agentgym.rollout")

_SENTINEL = "AGENTGYMSENTINEL{}X"
_SYSTEM_PROBE = "AGENTGYMSYSTEMPROBE"
#: Templates whose system-message fold was already logged in this process (log once).
_told_fold: set[str] = set()


class ChatTemplateError(AgentGymError):
    """The chat template cannot express an agent episode (e.g. it drops assistant messages)."""


@dataclass
class TurnDelta:
    #: Tokens appended after the model's sampled tokens (end-of-turn if not sampled, observation
    #: turn, generation prompt). Never trained on.
    ids: list[int]
    text: str
    fallback: bool


class ChatFormat:
    """Renders episodes with *tokenizer*'s chat template (or *chat_template*) as token ids."""

    def __init__(self, tokenizer: Any, chat_template: str | None = None) -> None:
        self.tokenizer = tokenizer
        self.chat_template = chat_template
        if not (chat_template or getattr(tokenizer, "chat_template", None)):
            raise ChatTemplateError(
                "the tokenizer has no chat template; set model.chat_template to a Jinja template string"
            )
        a0 = _assistant(_SENTINEL.format(0))
        #: Why system text goes into the first user message (None: the template has a system role).
        self.system_fold = self._system_fold()
        base = [_user("u")] if self.system_fold else [_system("s"), _user("u")]
        probe = self.render([*base, a0], add_generation_prompt=False)
        if _SENTINEL.format(0) not in probe:
            raise ChatTemplateError("the chat template does not render assistant messages; it cannot hold an episode")
        #: What the template writes after an assistant reply, e.g. ``<|im_end|>\n``.
        self.assistant_suffix = probe.split(_SENTINEL.format(0), 1)[1]
        #: The end-of-turn marker (the suffix without trailing whitespace), e.g. ``<|im_end|>``.
        self.eot_text = self.assistant_suffix.rstrip()
        eot_ids = self.encode(self.eot_text) if self.eot_text else []
        #: Token id of the end-of-turn marker when it is a single token, else None.
        self.eot_id: int | None = eot_ids[0] if len(eot_ids) == 1 else None
        #: Where the generation prompt and a rendered history turn open an assistant reply
        #: differently: text only the generation prompt has (DeepSeek-R1's ``<think>\n``) and text
        #: only the history has (Mistral's space before the reply). Usually both empty.
        self.prompt_lead, self.history_lead = self._leads()
        self._warned = False

    # -- rendering ------------------------------------------------------------------------
    def render(self, messages: list[dict[str, str]], *, add_generation_prompt: bool) -> str:
        text, error = self._try(messages, add_generation_prompt=add_generation_prompt)
        if text is None:
            roles = ", ".join(m["role"] for m in messages)
            raise ChatTemplateError(
                f"the chat template raised {error} rendering messages with roles [{roles}]; an agent episode is "
                "system (optional), user, then alternating assistant/user messages: set model.chat_template to a "
                "template that renders such a conversation"
            )
        return text

    def _try(self, messages: list[dict[str, str]], *, add_generation_prompt: bool) -> tuple[str | None, str]:
        kwargs = {"chat_template": self.chat_template} if self.chat_template else {}
        try:
            text = self.tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=add_generation_prompt, **kwargs
            )
        except Exception as exc:  # noqa: BLE001 - templates raise anything (raise_exception, TypeError...)
            return None, f"{type(exc).__name__}({str(exc)!r})"
        return text, ""

    def _system_fold(self) -> str | None:
        """Why the system message cannot be a message of its own (None: it can)."""
        a0 = _SENTINEL.format(0)
        text, error = self._try([_system(_SYSTEM_PROBE), _user("u"), _assistant(a0), _user("v")],
                                add_generation_prompt=True)
        if text is None:
            return f"raised {error} for a system message"
        head, _, tail = text.partition(a0)
        if _SYSTEM_PROBE in head:
            return None
        if _SYSTEM_PROBE in tail:
            return "moves the system message into the latest user turn, which would change earlier turns"
        return "drops system messages"

    def _leads(self) -> tuple[str, str]:
        base = [_user("u")] if self.system_fold else [_system("s"), _user("u")]
        closed, _ = self._try(base, add_generation_prompt=False)
        prompt, _ = self._try(base, add_generation_prompt=True)
        history, _ = self._try([*base, _assistant(_SENTINEL.format(0)), _user("v")], add_generation_prompt=True)
        if closed is None or prompt is None or history is None:
            return "", ""
        history = history.partition(_SENTINEL.format(0))[0]
        if not (prompt.startswith(closed) and history.startswith(closed)):
            return "", ""  # not prefix-stable even here: delta() will fall back
        prompt, history = prompt[len(closed) :], history[len(closed) :]
        common = len(os.path.commonprefix([prompt, history]))
        return prompt[common:], history[common:]

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=False)

    @property
    def stop_token_ids(self) -> tuple[int, ...]:
        return (self.eot_id,) if self.eot_id is not None else ()

    @property
    def stop_strings(self) -> tuple[str, ...]:
        return (self.eot_text,) if self.eot_text and self.eot_id is None else ()

    # -- episode pieces -------------------------------------------------------------------
    def start(self, system: str, first_observation: str) -> tuple[list[dict[str, str]], str, list[int]]:
        """Messages, rendered text and token ids of the initial prompt."""
        if not system:  # no system message: the template's own default (if it has one) applies
            messages = [_user(first_observation)]
        elif self.system_fold is None:
            messages = [_system(system), _user(first_observation)]
        else:
            messages = [_user(f"{system}\n\n{first_observation}")]
            key = self.chat_template or str(getattr(self.tokenizer, "chat_template", ""))
            if key not in _told_fold:
                _told_fold.add(key)
                log.warning(
                    "the system text (agent.system_prompt, and the env's instruction unless "
                    "agent.instruction_position puts it elsewhere) goes at the start of the first user message, "
                    "because the chat template %s.", self.system_fold,
                )
        text = self.render(messages, add_generation_prompt=True)
        return messages, text, self.encode(text)

    def split_reply(self, tokens: list[int]) -> tuple[str, bool]:
        """The reply's message content and whether the model itself produced the end-of-turn marker.

        The content leaves out a leading :attr:`history_lead` (when the generation prompt lacks
        it), so the template renders the content back to the sampled text.
        """
        if self.eot_id is not None and tokens and tokens[-1] == self.eot_id:
            text, sampled = self.decode(tokens[:-1]), True
        else:
            text, sampled = self.decode(tokens), False
            if self.eot_id is None and self.eot_text and text.endswith(self.eot_text):
                text, sampled = text[: -len(self.eot_text)], True
        if self.history_lead and not self.prompt_lead and text.startswith(self.history_lead):
            text = text[len(self.history_lead) :]
        return text, sampled

    def delta(self, skeleton: list[dict[str, str]], prev_text: str, observation: str, eot_sampled: bool) -> TurnDelta:
        """Tokens after the latest assistant reply: rest of its turn, the observation turn, generation prompt.

        *skeleton* is the conversation so far with sentinel assistant contents (the newest
        reply not yet included); *prev_text* is the render of *skeleton* with the generation prompt.
        """
        n = sum(1 for m in skeleton if m["role"] == "assistant")
        sentinel = _SENTINEL.format(n)
        full = self.render(skeleton + [_assistant(sentinel), _user(observation)], add_generation_prompt=True)
        head, found, after = full.partition(sentinel)
        # The episode holds prev_text (ending in the generation prompt); the re-render holds the
        # same text with the history form of the assistant opening.
        fallback = not (found and _stable(prev_text, self.prompt_lead, head, self.history_lead))
        if fallback:
            if not self._warned:
                log.warning(
                    "chat template is not prefix-stable: re-rendering the conversation changes text already in "
                    "the episode (%s). Observation turns use the minimal-render fallback (the observation turn as "
                    "the template renders it after one exchange) and trajectories are flagged "
                    "template_fallback=True; set model.chat_template to a prefix-stable template to avoid this.",
                    _where(prev_text, head) if found else "the latest reply is not rendered",
                )
                self._warned = True
            after = self._minimal(sentinel, observation).partition(sentinel)[2]
        if eot_sampled and self.eot_text and after.startswith(self.eot_text):
            after = after[len(self.eot_text) :]
        return TurnDelta(ids=self.encode(after) if after else [], text=after, fallback=fallback)

    def _minimal(self, sentinel: str, observation: str) -> str:
        """One exchange then the observation; no system message, so no system text lands in the delta."""
        rest = [_assistant(sentinel), _user(observation)]
        text, _ = self._try([_user("u"), *rest], add_generation_prompt=True)
        return text if text is not None else self.render([_system("s"), _user("u"), *rest], add_generation_prompt=True)

    def skeleton_text(self, skeleton: list[dict[str, str]]) -> str:
        return self.render(skeleton, add_generation_prompt=True)


def _stable(prev_text: str, prompt_lead: str, head: str, history_lead: str) -> bool:
    return (
        prev_text.endswith(prompt_lead)
        and head.endswith(history_lead)
        and prev_text[: len(prev_text) - len(prompt_lead)] == head[: len(head) - len(history_lead)]
    )


def _where(before: str, after: str) -> str:
    """Where two renders first differ, with a little context, for the fallback warning."""
    i = len(os.path.commonprefix([before, after]))
    return f"at character {i}: was {before[max(0, i - 20) : i + 30]!r}, now {after[max(0, i - 20) : i + 30]!r}"


def _system(content: str) -> dict[str, str]:
    return {"role": "system", "content": content}


def _user(content: str) -> dict[str, str]:
    return {"role": "user", "content": content}


def _assistant(content: str) -> dict[str, str]:
    return {"role": "assistant", "content": content}


def sentinel(index: int) -> str:
    """The placeholder standing for assistant reply *index* in skeleton renders."""
    return _SENTINEL.format(index)
