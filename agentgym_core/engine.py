"""The engine interface: token ids in, sampled token ids + logprobs out.

Engines are plugins (``hf``, ``vllm``) registered with ``register_engines``. Core deals
only in plain Python types here, so the agent and rollout logic never import torch.
"""
from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Optional

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


class Engine:
    """Generates tokens for batches of requests.

    ``generate`` is synchronous and may be called from a worker thread; rollout batches
    the requests of many concurrent episodes into one call.
    """

    def generate(self, requests: list[GenerationRequest]) -> list[GenerationResult]:
        raise NotImplementedError

    #: True when :meth:`submit` works: the engine takes requests one at a time while it runs
    #: and starts each as soon as it has room (continuous batching), so rollout hands them over
    #: as they come instead of gathering batches (except in lockstep, where batches keep runs
    #: repeatable).
    supports_submit: bool = False

    def submit(self, request: GenerationRequest) -> Future:
        """Start generating *request* when there is room; the future resolves to its result.
        Thread-safe and non-blocking. Only when :attr:`supports_submit` is true."""
        raise NotImplementedError

    #: True when ``generate`` runs the trainer's live model object, so updates are seen as
    #: they happen; the trainer then passes that model to :meth:`update_weights` (to drop
    #: cached keys/values). False (an engine with its own copy, such as vLLM): after every
    #: update the trainer passes a state dict under the base model's names, LoRA merged in.
    shares_weights: bool = False

    def update_weights(self, source: Any) -> None:
        """Make the next ``generate`` use new policy weights (a model or a state dict)."""
        raise NotImplementedError

    def release(self, cache_key: str) -> None:
        """Forget the cached prefix of an episode. Default: nothing cached."""

    def close(self) -> None:
        """Free resources."""

    @property
    def tokenizer(self) -> Any:
        """The tokenizer the engine's token ids belong to."""
        raise NotImplementedError
