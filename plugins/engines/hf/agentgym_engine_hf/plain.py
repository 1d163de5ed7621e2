"""The plain decode path: each batch prefilled and decoded as it comes, with per-episode KV reuse.

Each request is prefilled alone, reusing the KV cache its episode left behind (a turn costs
only its new tokens) or, for an episode's first prompt, the cached keys and values of the
longest prefix it shares with another prompt (the system prompt and env instruction every
episode starts with); then all requests decode together as one batch whose caches are
left-padded with zeros, masked out, with explicit position ids. Logprobs are the
log-softmax of the raw logits (temperature 1, no top-p) of each sampled token.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import torch
from transformers import DynamicCache

from agentgym_core import GenerationRequest, GenerationResult, phase
from agentgym_hf.kvcache import KV, SlabCache, append, buffers, grown, layers, left_padded, out_cache

from .common import (PREFIX_CANDIDATES, DecodeTarget, check_request, common_prefix, eval_mode, hits_stop,
                     worth_sharing)
from .sampling import sample_tokens


@dataclass
class CachedEpisode:
    ids: list[int]  # tokens whose keys/values are the first len(ids) positions of ``kv``
    kv: KV  # owned by this entry alone: the episode's next prefill writes into it


@dataclass
class Row:
    """One request while it decodes."""

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

    def own(self, capacity: int) -> None:
        """Take a copy of buffers shared with an identical prompt's row (room for *capacity*)."""
        if not self.owned:
            self.kv = [(grown(k, self.length, capacity), grown(v, self.length, capacity)) for k, v in self.kv]
            self.owned = True


class PlainDecoder:
    """Generates with *target*'s model, batches of at most *max_batch_size*, keeping the keys and
    values of at most *max_cached_episodes* episodes (least recently used dropped first)."""

    def __init__(self, target: DecodeTarget, *, max_batch_size: int, max_cached_episodes: int,
                 share_prefixes: bool) -> None:
        self.target = target
        self.max_batch_size = max_batch_size
        self.max_cached_episodes = max_cached_episodes
        self.share_prefixes = share_prefixes
        #: Episode (``cache_key``) -> the keys and values its last turn left.
        self.cache: OrderedDict[str, CachedEpisode] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._run_lock = threading.Lock()

    def generate(self, requests: list[GenerationRequest]) -> list[GenerationResult]:
        if not requests:
            return []
        results: list[GenerationResult] = []
        with self._run_lock, torch.no_grad(), eval_mode(self.target.model):
            for start in range(0, len(requests), self.max_batch_size):
                prefilled: dict[tuple[int, ...], Row] = {}  # prompt -> its row: a GRPO group prefills once
                rows = [self._prefill(r, prefilled) for r in requests[start : start + self.max_batch_size]]
                self._decode(rows)
                results.extend(self._finish(row) for row in rows)
        return results

    def release(self, cache_key: str) -> None:
        with self._cache_lock:
            self.cache.pop(cache_key, None)

    def clear(self) -> None:
        with self._cache_lock:
            self.cache.clear()

    # -- internals --------------------------------------------------------------------------
    def _prefill(self, req: GenerationRequest, prefilled: dict[tuple[int, ...], Row]) -> Row:
        """Run *req*'s prompt (past its episode's cached prefix) or share the row of an identical prompt."""
        prompt = list(req.prompt_ids)
        check_request(prompt, req.params)
        cached = None
        if req.cache_key is not None:
            with self._cache_lock:
                cached = self.cache.pop(req.cache_key, None)
        seed = self.target.seed(req.params)
        twin = prefilled.get(tuple(prompt))
        if twin is not None:  # same keys, values and logits; read only, until Row.own() copies them
            kv, logits, ran = twin.kv, twin.logits, 0
        else:
            limit = len(prompt) - 1  # at least one token must run for logits
            reuse, donor = (common_prefix(cached.ids, prompt, limit), cached.kv) if cached is not None else (0, None)
            if self.share_prefixes and cached is None:  # an episode's first prompt (or its cache was evicted)
                reuse, donor = self._shared_prefix(prompt, limit, reuse, donor, prefilled)
            room = len(prompt) + req.params.max_new_tokens
            if not reuse:
                past = DynamicCache()
            elif cached is not None and donor is cached.kv:  # the episode's own buffers: append in place
                past = SlabCache([(k, v, reuse) for k, v in donor])
            else:  # another prompt's: copy the shared prefix into buffers of our own
                past = SlabCache([(grown(k, reuse, room), grown(v, reuse, room), reuse) for k, v in donor])
            device = self.target.device
            new = torch.tensor([prompt[reuse:]], device=device)
            positions = torch.arange(reuse, len(prompt), device=device)[None]
            n = len(prompt) - reuse
            with phase("prefill", tokens=n, attended=n * reuse + n * (n + 1) / 2, head=1):
                out = self._forward(input_ids=new, position_ids=positions, cache=past, logits_to_keep=1)
            kv, logits, ran = buffers(out_cache(out)), out.logits[0, -1].float(), len(prompt) - reuse
        row = Row(
            request=req,
            kv=kv,
            length=len(prompt),
            logits=logits,
            generator=torch.Generator().manual_seed(int(seed) % (2**63)),
            stop_ids=self.target.stop_ids(req.params),
            prefill=ran,
            tokens=[],
            logprobs=[],
            owned=twin is None,
        )
        prefilled.setdefault(tuple(prompt), row)
        return row

    def _shared_prefix(self, prompt: list[int], limit: int, reuse: int, donor: KV | None,
                       prefilled: dict[tuple[int, ...], Row]) -> tuple[int, KV | None]:
        """The longest prefix of *prompt* whose keys/values are at hand: a prompt prefilled in
        this call, or a cached episode. Causal attention makes a prefix's keys and values the
        same whatever follows it, so they can start another prompt."""
        with self._cache_lock:
            recent = [(c.ids, c.kv) for c in list(self.cache.values())[-PREFIX_CANDIDATES:]]
        best, best_kv = reuse, donor
        for ids, kv in [*((list(k), r.kv) for k, r in prefilled.items()), *reversed(recent)]:
            n = common_prefix(ids, prompt, limit)
            if n > best and worth_sharing(n, len(prompt)):
                best, best_kv = n, kv
        return best, best_kv

    def _forward(self, *, cache: object, **inputs: object) -> object:
        return self.target.model(**inputs, **{self.target.cache_arg: cache}, use_cache=True)

    def _decode(self, rows: list[Row]) -> None:
        self._sample(rows, torch.stack([r.logits for r in rows]))
        active = [r.finish is None for r in rows]
        if not any(active):
            for r in rows:
                r.own(r.length)
            return
        device = self.target.device
        width = max(r.length for r in rows)
        room = max(r.request.params.max_new_tokens for r in rows)
        cache = SlabCache(
            [left_padded([r.kv[li] for r in rows], [r.length for r in rows], width, room) for li in range(len(rows[0].kv))]
        )
        mask = torch.zeros(len(rows), width, dtype=torch.long, device=device)
        for i, r in enumerate(rows):
            mask[i, width - r.length :] = 1
        pad_id = self.target.tokenizer.pad_token_id or 0
        while any(r.finish is None for r in rows):
            live = torch.tensor([[1 if r.finish is None else 0] for r in rows], device=device)
            ids = torch.tensor([[r.tokens[-1] if r.finish is None else pad_id] for r in rows], device=device)
            pos = torch.tensor([[r.length + len(r.tokens) - 1] for r in rows], device=device)
            mask = torch.cat([mask, live], dim=1)
            with phase("decode", tokens=len(rows), attended=len(rows) * mask.shape[1], head=len(rows)):
                out = self._forward(input_ids=ids, attention_mask=mask, position_ids=pos, cache=cache)
            self._sample(rows, out.logits[:, -1])
        final = layers(cache)  # views of the batch buffers
        for i, r in enumerate(rows):
            fed = len(r.tokens) - 1  # the last sampled token never ran through the model
            # Only the decoded tokens go back into the episode's buffers (the prompt is there already).
            r.own(r.length + fed)
            decoded = slice(width, width + fed)
            r.kv = [(append(rk, r.length, k[i : i + 1, :, decoded]), append(rv, r.length, v[i : i + 1, :, decoded]))
                    for (rk, rv), (k, v) in zip(r.kv, final)]
            r.length += fed

    def _sample(self, rows: list[Row], logits: torch.Tensor) -> None:
        """Append the next token of every unfinished row (``logits``: one row per entry of *rows*)."""
        live = [i for i, r in enumerate(rows) if r.finish is None]
        logits = logits[live].float() if len(live) < len(rows) else logits.float()
        params = [rows[i].request.params for i in live]
        uniforms = [float(torch.rand((), generator=rows[i].generator)) if p.temperature > 0 else 0.0
                    for i, p in zip(live, params)]
        tokens = sample_tokens(logits, [p.temperature for p in params], [p.top_p for p in params], uniforms)
        logprobs = logits.gather(1, tokens[:, None])[:, 0] - torch.logsumexp(logits, dim=-1)
        tokenizer = self.target.tokenizer
        for i, p, token, logprob in zip(live, params, tokens.tolist(), logprobs.tolist()):
            row = rows[i]
            row.tokens.append(token)
            row.logprobs.append(logprob)
            if token in row.stop_ids or p.stop_strings and hits_stop(tokenizer, row.tokens, p.stop_strings):
                row.finish = "stop"
            elif len(row.tokens) >= p.max_new_tokens:
                row.finish = "length"

    def _finish(self, row: Row) -> GenerationResult:
        key = row.request.cache_key
        ids = list(row.request.prompt_ids) + row.tokens[:-1]
        if key is not None and row.kv and row.owned and row.length == len(ids):
            with self._cache_lock:
                self.cache[key] = CachedEpisode(ids=ids, kv=row.kv)
                while len(self.cache) > self.max_cached_episodes:
                    self.cache.popitem(last=False)
        row.kv = []
        return GenerationResult(
            token_ids=row.tokens, logprobs=row.logprobs, finish_reason=row.finish or "length", prefill_tokens=row.prefill
        )
