"""``HFEngine``: sampling with transformers, exact logprobs, and per-episode KV cache reuse.

The engine loads the model (or takes the trainer's live one) and hands it, as a
:class:`~agentgym_engine_hf.common.DecodeTarget`, to its decoders: :mod:`.plain` (each batch
prefilled and decoded as it comes; the default) and, with ``decode="static"``,
:mod:`.static_decoder` (fixed KV slots, a decode step on the device, continuous batching),
which falls back to the plain decoder's ``generate`` if the static path proves unusable.
"""
from __future__ import annotations

import contextlib
from concurrent.futures import Future
from typing import Any

import torch

from agentgym_core import Engine, GenerationRequest, GenerationResult, engine_settings
from agentgym_hf.kvcache import cache_arg
from agentgym_hf.loading import contiguous_lm_head, load_model, prepare_tokenizer, resolve_dtype

from .common import DecodeTarget
from .config import HFEngineConfig
from .plain import PlainDecoder


class HFEngine(Engine):
    """Rollout engine on a transformers causal LM (a path, an alias, or a live ``nn.Module``)."""

    Config = HFEngineConfig

    def __init__(
        self,
        model: Any,
        tokenizer: Any = None,
        *,
        dtype: str | torch.dtype = "auto",
        chat_template: str | None = None,
        max_context: int | None = None,
        own_weights: bool = False,
        **options: Any,
    ) -> None:
        """*model*: a path or alias (the engine loads its own copy) or a live ``nn.Module`` with its
        *tokenizer* (the trainer's policy). *dtype*, *chat_template* and *max_context* come from the
        ``model`` section; *options* are :class:`HFEngineConfig`'s fields (an unknown one fails
        with the valid names). *max_context* is the rollout's bound, kept for reference: the
        engine generates what it is asked to. *own_weights*: the module given is the engine's own
        copy (the trainer's bf16 copy of fp32 master weights), kept current by :meth:`update_weights`
        rather than shared with the trainer."""
        settings = engine_settings(HFEngineConfig, options, "hf")
        self.settings = settings
        self.max_context = max_context
        if settings.threads > 0:
            torch.set_num_threads(settings.threads)
        loaded = isinstance(model, (str, bytes)) or hasattr(model, "__fspath__")
        if loaded:
            model, loaded_tok = load_model(str(model), dtype=dtype, device=settings.device,
                                           chat_template=chat_template)
            tokenizer = tokenizer or loaded_tok
            self.shares_weights = False
        else:
            # The trainer's live policy (its updates are seen directly), or a copy it hands over.
            self.shares_weights = not own_weights
            if tokenizer is None:
                raise ValueError("HFEngine(model=<nn.Module>) needs tokenizer=")
        if tokenizer is None:
            raise ValueError("HFEngine needs a tokenizer")
        self.model = contiguous_lm_head(model)  # bf16 on a CPU: no copy of the vocabulary matrix a prompt
        self._tokenizer = prepare_tokenizer(tokenizer, chat_template)
        self.device = next(model.parameters()).device
        self.max_batch_size = settings.max_batch_size  # what rollout's batcher sends at once
        self.dtype = resolve_dtype(dtype, self.device) if loaded else next(model.parameters()).dtype
        eos = tokenizer.eos_token_id
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        target = DecodeTarget(model=model, tokenizer=self._tokenizer, device=self.device, cache_arg=cache_arg(base),
                              eos_ids=frozenset([eos] if isinstance(eos, int) else (eos or [])))
        #: The plain decode path (also the static one's fallback); ``plain.cache`` holds the episodes' KV.
        self.plain = PlainDecoder(target, max_batch_size=settings.max_batch_size,
                                  max_cached_episodes=settings.max_cached_episodes,
                                  share_prefixes=settings.share_prefixes)
        #: The static decoder with ``decode: static`` (None on the plain path).
        self.static = None
        if settings.decode == "static":  # fixed KV slots, decode step on the device, continuous batching
            from .static_decoder import StaticDecoder

            self.static = StaticDecoder(target, fallback=self.plain.generate, fallback_batch=settings.max_batch_size,
                                        slots=settings.max_batch_size, slot_tokens=settings.slot_tokens,
                                        sync_every=settings.sync_every, cuda_graphs=settings.cuda_graphs,
                                        max_cached_episodes=settings.max_cached_episodes,
                                        share_prefixes=settings.share_prefixes)
            self.supports_submit = True

    # -- Engine interface -------------------------------------------------------------------
    @property
    def tokenizer(self) -> Any:
        return self._tokenizer

    def generate(self, requests: list[GenerationRequest]) -> list[GenerationResult]:
        if self.static is not None and requests:
            return self.static.generate(requests)
        return self.plain.generate(requests)

    def submit(self, request: GenerationRequest) -> Future:
        """Start *request* as soon as a slot is free (``decode: static``); its result comes in the future."""
        if self.static is None:
            raise NotImplementedError("HFEngine.submit needs decode='static'; use generate()")
        return self.static.submit([request])[0]

    @property
    def busy_cpu_seconds(self) -> float:
        """CPU seconds the ``decode: static`` engine thread has worked (0 for the plain path)."""
        return self.static.cpu_seconds if self.static is not None else 0.0

    def update_weights(self, source: Any) -> None:
        """Load new weights (a model or state dict); a no-op when the engine shares the live policy."""
        self.clear_cache()
        if source is self.model or (self.shares_weights and source is None):
            return
        state = source.state_dict() if hasattr(source, "state_dict") else source
        with self.static.idle() if self.static is not None else contextlib.nullcontext():
            missing, unexpected = self.model.load_state_dict(state, strict=False)
        if unexpected or len(missing) == len(list(self.model.state_dict())):
            raise ValueError(f"update_weights: state dict does not fit the model (unexpected keys {unexpected[:5]})")

    def release(self, cache_key: str) -> None:
        self.plain.release(cache_key)
        if self.static is not None:
            self.static.release(cache_key)

    def clear_cache(self) -> None:
        self.plain.clear()
        if self.static is not None:
            self.static.clear()

    def close(self) -> None:
        self.clear_cache()
        if self.static is not None:
            self.static.close()
