"""``HFEngine``: sampling with transformers, exact logprobs, and per-episode KV cache reuse.

Each request is prefilled alone, reusing the KV cache its episode left behind (a turn costs
only its new tokens) or, for an episode's first prompt, the cached keys and values of the
longest prefix it shares with another prompt (the system prompt and env instruction every
episode starts with); then all requests decode together as one batch whose caches are
left-padded with zeros, masked out, with explicit position ids. Logprobs are the
log-softmax of the raw logits (temperature 1, no top-p) of each sampled token.

``decode="static"`` hands generation to :mod:`.scheduler` instead (fixed KV slots, a decode
step on the device, continuous batching); this module's path is its fallback.
"""
from __future__ import annotations

import contextlib
import random
import threading
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import torch
from transformers import DynamicCache

from agentgym_core.engine import Engine, GenerationRequest, GenerationResult, engine_settings
from agentgym_hf.kvcache import KV, SlabCache, append, buffers, cache_arg, grown, layers, left_padded, out_cache
from agentgym_hf.loading import load_model, prepare_tokenizer, resolve_dtype

from .config import HFEngineConfig
from .sampling import sample_tokens

@dataclass
class _Cached:
    ids: list[int]  # tokens whose keys/values are the first len(ids) positions of ``kv``
    kv: KV  # owned by this entry alone: the episode's next prefill writes into it


@dataclass
class _Row:
    request: GenerationRequest
    kv: KV
    length: int  # tokens in kv (the prompt)
    logits: torch.Tensor  # next-token logits after the prompt, [vocab]
    generator: torch.Generator
    stop_ids: frozenset[int]
    prefill: int
    tokens: list[int]
    logprobs: list[float]
    finish: str | None = None
    #: ``kv`` belongs to this row alone (False: shared with an identical prompt's row).
    owned: bool = True


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
        **options: Any,
    ) -> None:
        """*model*: a path or alias (the engine loads its own copy) or a live ``nn.Module`` with its
        *tokenizer* (the trainer's policy). *dtype*, *chat_template* and *max_context* come from the
        ``model`` section; *options* are :class:`HFEngineConfig`'s fields (an unknown one fails
        with the valid names). *max_context* is the rollout's bound, kept for reference: the
        engine generates what it is asked to."""
        settings = engine_settings(HFEngineConfig, options, "hf")
        self.settings = settings
        self.max_context = max_context
        if settings.threads > 0:
            torch.set_num_threads(settings.threads)
        if isinstance(model, (str, bytes)) or hasattr(model, "__fspath__"):
            model, loaded_tok = load_model(str(model), dtype=dtype, device=settings.device,
                                           chat_template=chat_template)
            tokenizer = tokenizer or loaded_tok
            self.shares_weights = False
        else:
            self.shares_weights = True  # the trainer's live policy: its updates are seen directly
            if tokenizer is None:
                raise ValueError("HFEngine(model=<nn.Module>) needs tokenizer=")
        if tokenizer is None:
            raise ValueError("HFEngine needs a tokenizer")
        self.model = model
        self._tokenizer = prepare_tokenizer(tokenizer, chat_template)
        self.device = next(model.parameters()).device
        self.max_batch_size = settings.max_batch_size
        self.max_cached_episodes = settings.max_cached_episodes
        self.share_prefixes = settings.share_prefixes
        self._cache: OrderedDict[str, _Cached] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._run_lock = threading.Lock()
        self._rng = random.Random()
        eos = tokenizer.eos_token_id
        self._eos_ids = frozenset([eos] if isinstance(eos, int) else (eos or []))
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        self._cache_arg = cache_arg(base)
        self.dtype = resolve_dtype(dtype, self.device) if not self.shares_weights else next(model.parameters()).dtype
        self._static = None
        if settings.decode == "static":  # fixed KV slots, decode step on the device, continuous batching
            from .scheduler import StaticDecoder

            self._static = StaticDecoder(self, slots=settings.max_batch_size, slot_tokens=settings.slot_tokens,
                                         sync_every=settings.sync_every, cuda_graphs=settings.cuda_graphs)
            self.supports_submit = True

    # -- Engine interface -------------------------------------------------------------------
    @property
    def tokenizer(self) -> Any:
        return self._tokenizer

    def generate(self, requests: list[GenerationRequest]) -> list[GenerationResult]:
        if self._static is not None and requests:
            return self._static.generate(requests)
        return self._generate_plain(requests)

    def submit(self, request: GenerationRequest) -> Future:
        """Start *request* as soon as a slot is free (``decode: static``); its result comes in the future."""
        if self._static is None:
            raise NotImplementedError("HFEngine.submit needs decode='static'; use generate()")
        return self._static.submit([request])[0]

    @property
    def busy_cpu_seconds(self) -> float:
        """CPU seconds the ``decode: static`` engine thread has worked (0 for the plain path)."""
        return self._static.cpu_seconds if self._static is not None else 0.0

    def _generate_plain(self, requests: list[GenerationRequest]) -> list[GenerationResult]:
        if not requests:
            return []
        results: list[GenerationResult] = []
        with self._run_lock, torch.no_grad(), _eval_mode(self.model):
            for start in range(0, len(requests), self.max_batch_size):
                prefilled: dict[tuple[int, ...], _Row] = {}  # prompt -> its row: a GRPO group prefills once
                rows = [self._prefill(r, prefilled) for r in requests[start : start + self.max_batch_size]]
                self._decode(rows)
                results.extend(self._finish(row) for row in rows)
        return results

    def update_weights(self, source: Any) -> None:
        """Load new weights (a model or state dict); a no-op when the engine shares the live policy."""
        self.clear_cache()
        if source is self.model or (self.shares_weights and source is None):
            return
        state = source.state_dict() if hasattr(source, "state_dict") else source
        with self._static.idle() if self._static is not None else contextlib.nullcontext():
            missing, unexpected = self.model.load_state_dict(state, strict=False)
        if unexpected or len(missing) == len(list(self.model.state_dict())):
            raise ValueError(f"update_weights: state dict does not fit the model (unexpected keys {unexpected[:5]})")

    def release(self, cache_key: str) -> None:
        with self._cache_lock:
            self._cache.pop(cache_key, None)
        if self._static is not None:
            self._static.release(cache_key)

    def clear_cache(self) -> None:
        with self._cache_lock:
            self._cache.clear()
        if self._static is not None:
            self._static.clear()

    def close(self) -> None:
        self.clear_cache()
        if self._static is not None:
            self._static.close()

    # -- internals --------------------------------------------------------------------------
    def _prefill(self, req: GenerationRequest, prefilled: dict[tuple[int, ...], _Row]) -> _Row:
        """Run *req*'s prompt (past its episode's cached prefix) or share the row of an identical prompt."""
        prompt = list(req.prompt_ids)
        if not prompt:
            raise ValueError("GenerationRequest.prompt_ids is empty")
        if req.params.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {req.params.max_new_tokens}")
        cached = None
        if req.cache_key is not None:
            with self._cache_lock:
                cached = self._cache.pop(req.cache_key, None)
        seed = req.params.seed if req.params.seed is not None else self._rng.getrandbits(63)
        twin = prefilled.get(tuple(prompt))
        if twin is not None:  # same keys, values and logits; read only, until _own() copies them
            kv, logits, ran = twin.kv, twin.logits, 0
        else:
            limit = len(prompt) - 1  # at least one token must run for logits
            reuse, donor = (_common_prefix(cached.ids, prompt, limit), cached.kv) if cached is not None else (0, None)
            if self.share_prefixes and cached is None:  # an episode's first prompt (or its cache was evicted)
                reuse, donor = self._shared_prefix(prompt, limit, reuse, donor, prefilled)
            room = len(prompt) + req.params.max_new_tokens
            if not reuse:
                past = DynamicCache()
            elif cached is not None and donor is cached.kv:  # the episode's own buffers: append in place
                past = SlabCache([(k, v, reuse) for k, v in donor])
            else:  # another prompt's: copy the shared prefix into buffers of our own
                past = SlabCache([(grown(k, reuse, room), grown(v, reuse, room), reuse) for k, v in donor])
            new = torch.tensor([prompt[reuse:]], device=self.device)
            positions = torch.arange(reuse, len(prompt), device=self.device)[None]
            out = self._forward(input_ids=new, position_ids=positions, cache=past, logits_to_keep=1)
            kv, logits, ran = buffers(out_cache(out)), out.logits[0, -1].float(), len(prompt) - reuse
        row = _Row(
            request=req,
            kv=kv,
            length=len(prompt),
            logits=logits,
            generator=torch.Generator().manual_seed(int(seed) % (2**63)),
            stop_ids=self._eos_ids | frozenset(req.params.stop_token_ids),
            prefill=ran,
            tokens=[],
            logprobs=[],
            owned=twin is None,
        )
        prefilled.setdefault(tuple(prompt), row)
        return row

    #: Shorter common prefixes (and ones under a fifth of the prompt) are recomputed.
    MIN_SHARED_PREFIX = 64
    #: Cached episodes searched for a shared prefix (the most recently used ones).
    PREFIX_CANDIDATES = 64

    def _shared_prefix(self, prompt: list[int], limit: int, reuse: int, donor: KV | None,
                       prefilled: dict[tuple[int, ...], _Row]) -> tuple[int, KV | None]:
        """The longest prefix of *prompt* whose keys/values are at hand: a prompt prefilled in
        this call, or a cached episode. Causal attention makes a prefix's keys and values the
        same whatever follows it, so they can start another prompt."""
        with self._cache_lock:
            recent = [(c.ids, c.kv) for c in list(self._cache.values())[-self.PREFIX_CANDIDATES :]]
        best, best_kv = reuse, donor
        for ids, kv in [*((list(k), r.kv) for k, r in prefilled.items()), *reversed(recent)]:
            n = _common_prefix(ids, prompt, limit)
            # A short prefix before a long rest does not pay: a prefill past cached tokens needs an
            # explicit attention mask, which on CPU took 1.9x longer for 5.6k tokens after 100.
            if n > best and n >= self.MIN_SHARED_PREFIX and 4 * n >= len(prompt) - n:
                best, best_kv = n, kv
        return best, best_kv

    def _forward(self, *, cache: Any, **inputs: Any) -> Any:
        return self.model(**inputs, **{self._cache_arg: cache}, use_cache=True)

    def _decode(self, rows: list[_Row]) -> None:
        self._sample(rows, torch.stack([r.logits for r in rows]))
        active = [r.finish is None for r in rows]
        if not any(active):
            for r in rows:
                _own(r, r.length)
            return
        width = max(r.length for r in rows)
        room = max(r.request.params.max_new_tokens for r in rows)
        cache = SlabCache(
            [left_padded([r.kv[li] for r in rows], [r.length for r in rows], width, room) for li in range(len(rows[0].kv))]
        )
        mask = torch.zeros(len(rows), width, dtype=torch.long, device=self.device)
        for i, r in enumerate(rows):
            mask[i, width - r.length :] = 1
        pad_id = self._tokenizer.pad_token_id or 0
        while any(r.finish is None for r in rows):
            live = torch.tensor([[1 if r.finish is None else 0] for r in rows], device=self.device)
            ids = torch.tensor([[r.tokens[-1] if r.finish is None else pad_id] for r in rows], device=self.device)
            pos = torch.tensor([[r.length + len(r.tokens) - 1] for r in rows], device=self.device)
            mask = torch.cat([mask, live], dim=1)
            out = self._forward(input_ids=ids, attention_mask=mask, position_ids=pos, cache=cache)
            self._sample(rows, out.logits[:, -1])
        final = layers(cache)  # views of the batch buffers
        for i, r in enumerate(rows):
            fed = len(r.tokens) - 1  # the last sampled token never ran through the model
            # Only the decoded tokens go back into the episode's buffers (the prompt is there already).
            _own(r, r.length + fed)
            decoded = slice(width, width + fed)
            r.kv = [(append(rk, r.length, k[i : i + 1, :, decoded]), append(rv, r.length, v[i : i + 1, :, decoded]))
                    for (rk, rv), (k, v) in zip(r.kv, final)]
            r.length += fed

    def _sample(self, rows: list[_Row], logits: torch.Tensor) -> None:
        """Append the next token of every unfinished row (``logits``: one row per entry of *rows*)."""
        live = [i for i, r in enumerate(rows) if r.finish is None]
        logits = logits[live].float() if len(live) < len(rows) else logits.float()
        params = [rows[i].request.params for i in live]
        uniforms = [float(torch.rand((), generator=rows[i].generator)) if p.temperature > 0 else 0.0
                    for i, p in zip(live, params)]
        tokens = sample_tokens(logits, [p.temperature for p in params], [p.top_p for p in params], uniforms)
        logprobs = logits.gather(1, tokens[:, None])[:, 0] - torch.logsumexp(logits, dim=-1)
        for i, p, token, logprob in zip(live, params, tokens.tolist(), logprobs.tolist()):
            row = rows[i]
            row.tokens.append(token)
            row.logprobs.append(logprob)
            if token in row.stop_ids or p.stop_strings and _hits_stop(self._tokenizer, row.tokens, p.stop_strings):
                row.finish = "stop"
            elif len(row.tokens) >= p.max_new_tokens:
                row.finish = "length"

    def _finish(self, row: _Row) -> GenerationResult:
        key = row.request.cache_key
        ids = list(row.request.prompt_ids) + row.tokens[:-1]
        if key is not None and row.kv and row.owned and row.length == len(ids):
            with self._cache_lock:
                self._cache[key] = _Cached(ids=ids, kv=row.kv)
                while len(self._cache) > self.max_cached_episodes:
                    self._cache.popitem(last=False)
        row.kv = []
        return GenerationResult(
            token_ids=row.tokens, logprobs=row.logprobs, finish_reason=row.finish or "length", prefill_tokens=row.prefill
        )


def _common_prefix(a: list[int], b: list[int], limit: int) -> int:
    """Length of the common prefix of *a* and *b*, at most *limit*."""
    n = min(len(a), len(b), limit)
    if n <= 0 or a[0] != b[0]:
        return 0
    if a[:n] == b[:n]:
        return n
    lo, hi = 1, n  # a[:lo] == b[:lo] and a[:hi] != b[:hi]: bisect on list equality (C speed)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def _own(row: _Row, capacity: int) -> None:
    """Give a row that shares an identical prompt's buffers its own copy (room for *capacity*)."""
    if not row.owned:
        row.kv = [(grown(k, row.length, capacity), grown(v, row.length, capacity)) for k, v in row.kv]
        row.owned = True


def _hits_stop(tokenizer: Any, tokens: list[int], stops: tuple[str, ...]) -> bool:
    longest = max(len(s) for s in stops)
    tail = tokenizer.decode(tokens[-(longest + 2) :], skip_special_tokens=False)
    return any(s in tail for s in stops)


@contextlib.contextmanager
def _eval_mode(model: Any) -> Iterator[None]:
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        if was_training:
            model.train()
