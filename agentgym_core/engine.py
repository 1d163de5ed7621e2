"""The engine interface: token ids in, sampled token ids + logprobs out.

Engines are plugins (``hf``, ``vllm``) registered with ``register_engines``; :class:`Engine` says
what one implements (docs/engines.md: "Writing an engine"). Core deals only in plain Python types
here, so the agent and rollout logic never import torch.
"""
from __future__ import annotations

import abc
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional

from .options import check_options


@dataclass
class SamplingParams:
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 64
    #: Generation stops after any of these strings appears in the decoded new text
    #: (the tokens up to and including the one that completed it are kept).
    stop_strings: tuple[str, ...] = ()
    #: Generation stops after any of these token ids (kept in the output). The engine adds
    #: the tokenizer's EOS / end-of-turn ids itself.
    stop_token_ids: tuple[int, ...] = ()
    seed: Optional[int] = None


@dataclass
class GenerationRequest:
    prompt_ids: list[int]
    params: SamplingParams = field(default_factory=SamplingParams)
    #: Identifies an episode whose next request extends this prompt, so the engine may keep
    #: its KV cache (``None``: no reuse). Call :meth:`Engine.release` when the episode ends.
    cache_key: Optional[str] = None


@dataclass
class GenerationResult:
    token_ids: list[int]
    #: log p(token | prefix) of each sampled token under the sampling distribution's model
    #: (temperature 1, no top-p truncation), one per token in ``token_ids``.
    logprobs: list[float]
    #: ``"stop"`` (EOS, stop id or stop string) or ``"length"`` (max_new_tokens reached).
    finish_reason: str
    #: How many prompt tokens the engine had to run through the model (prefill), for the
    #: prefix-cache benchmark; ``len(prompt_ids)`` when nothing was reused.
    prefill_tokens: int = 0
    #: The version of the policy's weights that generated it, when the engine's caller counts versions
    #: (asynchronous training); None otherwise.
    weight_version: Optional[int] = None


def engine_settings(config_cls: type, options: dict[str, Any], name: str) -> Any:
    """An engine's ``Config`` built from the ``engine`` section's *options*: the one place an
    engine's options and their defaults are declared. Unknown keys fail like a config file's
    (did-you-mean and the valid keys), so an engine never swallows a misspelt option.

    Every engine's constructor is ``Engine(model, tokenizer=None, *, dtype, chat_template,
    max_context, **options)``: the first keywords come from the ``model`` section, *options*
    are its ``Config``'s fields.
    """
    check_options(f"engine {name!r}", config_cls, options)
    return config_cls(**options)


class Engine(abc.ABC):
    """Generates tokens for batches of requests: what rollout asks of a model (docs/engines.md).

    An engine implements :meth:`generate`, :attr:`tokenizer` and :meth:`update_weights`; two class
    attributes tell a trainer how to work with it, so none has to probe: :attr:`shares_weights` (what
    :meth:`update_weights` receives) and :attr:`placement` (who puts it on a device). Its constructor
    is ``Engine(model, tokenizer=None, *, dtype, chat_template, max_context, **options)``: the first
    keywords come from the ``model`` section, *options* are its ``Config``'s fields
    (:func:`engine_settings`). ``generate`` is synchronous and may be called from a worker thread;
    rollout batches the requests of many concurrent episodes into one call.
    """

    #: What :meth:`update_weights` receives after each training update. True: the engine runs the
    #: trainer's live model object, which is passed itself (the update is already there: drop what was
    #: cached under the old weights). False: the engine has its own copy and gets a state dict under
    #: the base model's names (LoRA merged in, or only the adapted layers when the copy was made from
    #: the trainer's model), to load before the next ``generate``. An engine may set it per instance.
    shares_weights: bool = False

    #: Who puts the engine on a device. ``"option"``: its ``Config`` has a ``device`` field, which a
    #: trainer that keeps the engine apart from its own model (FSDP) sets to its own device
    #: (:meth:`RunParts.load_engine <agentgym_core.assembly.RunParts.load_engine>` ``device=``).
    #: ``"self"``: the engine places itself (vLLM takes its share of GPU memory); ``device=`` is not passed.
    placement: ClassVar[str] = "option"

    #: True when :meth:`submit` works: the engine takes requests one at a time while it runs
    #: and starts each as soon as it has room (continuous batching), so rollout hands them over
    #: as they come instead of gathering batches (except in lockstep, where batches keep runs
    #: repeatable).
    supports_submit: bool = False

    @abc.abstractmethod
    def generate(self, requests: list[GenerationRequest]) -> list[GenerationResult]:
        """One result per request, in order: the sampled token ids (ending with a stop token or string
        when one came), one log-probability per token, the finish reason and the prefill count."""

    @property
    @abc.abstractmethod
    def tokenizer(self) -> Any:
        """The tokenizer the engine's token ids belong to (a transformers tokenizer for rollout's chat
        format; the engine checks call it as ``tokenizer(text, add_special_tokens=False)``)."""

    @abc.abstractmethod
    def update_weights(self, source: Any) -> None:
        """Make the next ``generate`` use the policy's new weights: *source* is the trainer's model when
        :attr:`shares_weights`, else a state dict (see :attr:`shares_weights`)."""

    def submit(self, request: GenerationRequest) -> Future:
        """Start generating *request* when there is room; the future resolves to its result.
        Thread-safe and non-blocking. Only when :attr:`supports_submit` is true."""
        raise NotImplementedError(f"{type(self).__name__} does not take requests one at a time "
                                  "(supports_submit is False): call generate")

    def release(self, cache_key: str) -> None:  # optional: an engine that caches nothing keeps this
        """Forget the cached prefix of an episode. Default: nothing cached."""
        return None

    def close(self) -> None:  # optional
        """Free resources. Default: none held."""
        return None
