"""Chat-template rendering as token deltas, so an episode is built by appending, never re-encoding.

The model's own template (or ``model.chat_template``) renders every message. Past assistant
turns are kept exactly as sampled: to find what the template puts *after* an assistant turn
(its end-of-turn marker, the next observation turn and the generation prompt), the
conversation is rendered with a sentinel in place of each assistant reply and the text after
the last sentinel is the delta. The text before it must equal the previous render (prefix
stability); when a template breaks that, the delta is taken from a minimal two-message render
instead, a warning is logged and the trajectory is flagged ``template_fallback``.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ..errors import AgentGymError

log = logging.getLogger("agentgym.rollout")

_SENTINEL = "AGENTGYMSENTINEL{}X"


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
        probe = self.render(
            [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}, _assistant(_SENTINEL.format(0))],
            add_generation_prompt=False,
        )
        if _SENTINEL.format(0) not in probe:
            raise ChatTemplateError("the chat template does not render assistant messages; it cannot hold an episode")
        #: What the template writes after an assistant reply, e.g. ``<|im_end|>\n``.
        self.assistant_suffix = probe.split(_SENTINEL.format(0), 1)[1]
        #: The end-of-turn marker (the suffix without trailing whitespace), e.g. ``<|im_end|>``.
        self.eot_text = self.assistant_suffix.rstrip()
        eot_ids = self.encode(self.eot_text) if self.eot_text else []
        #: Token id of the end-of-turn marker when it is a single token, else None.
        self.eot_id: int | None = eot_ids[0] if len(eot_ids) == 1 else None
        self._warned = False

    # -- rendering ------------------------------------------------------------------------
    def render(self, messages: list[dict[str, str]], *, add_generation_prompt: bool) -> str:
        kwargs = {"chat_template": self.chat_template} if self.chat_template else {}
        return self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=add_generation_prompt, **kwargs
        )

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
        messages = [{"role": "user", "content": first_observation}]
        if system:  # no system message: the template's own default (if it has one) applies
            messages.insert(0, {"role": "system", "content": system})
        text = self.render(messages, add_generation_prompt=True)
        return messages, text, self.encode(text)

    def split_reply(self, tokens: list[int]) -> tuple[str, bool]:
        """The reply's message content and whether the model itself produced the end-of-turn marker."""
        if self.eot_id is not None and tokens and tokens[-1] == self.eot_id:
            return self.decode(tokens[:-1]), True
        text = self.decode(tokens)
        if self.eot_id is None and self.eot_text and text.endswith(self.eot_text):
            return text[: -len(self.eot_text)], True
        return text, False

    def delta(self, skeleton: list[dict[str, str]], prev_text: str, observation: str, eot_sampled: bool) -> TurnDelta:
        """Tokens after the latest assistant reply: rest of its turn, the observation turn, generation prompt.

        *skeleton* is the conversation so far with sentinel assistant contents (the newest
        reply not yet included); *prev_text* is the render of *skeleton* with the generation prompt.
        """
        n = sum(1 for m in skeleton if m["role"] == "assistant")
        sentinel = _SENTINEL.format(n)
        full = self.render(
            skeleton + [_assistant(sentinel), {"role": "user", "content": observation}], add_generation_prompt=True
        )
        head, found, after = full.partition(sentinel)
        fallback = not found or head != prev_text
        if fallback:
            if not self._warned:
                log.warning(
                    "chat template is not prefix-stable (re-rendering the conversation changes earlier text); "
                    "using the minimal-render fallback for observation turns. Trajectories are flagged "
                    "template_fallback=True; set model.chat_template to a prefix-stable template to avoid this."
                )
                self._warned = True
            minimal = self.render(
                [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}, _assistant(sentinel),
                 {"role": "user", "content": observation}],
                add_generation_prompt=True,
            )
            after = minimal.partition(sentinel)[2]
        if eot_sampled and self.eot_text and after.startswith(self.eot_text):
            after = after[len(self.eot_text) :]
        return TurnDelta(ids=self.encode(after) if after else [], text=after, fallback=fallback)

    def skeleton_text(self, skeleton: list[dict[str, str]]) -> str:
        return self.render(skeleton, add_generation_prompt=True)


def _assistant(content: str) -> dict[str, str]:
    return {"role": "assistant", "content": content}


def sentinel(index: int) -> str:
    """The placeholder standing for assistant reply *index* in skeleton renders."""
    return _SENTINEL.format(index)
