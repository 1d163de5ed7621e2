"""The static decode mode's device side: a KV cache of fixed slots and a fixed-shape decode step.

Every layer's keys and values live in one preallocated buffer ``[slots, kv_heads, capacity,
head_dim]``; a slot holds one sequence, valid over its first ``pos`` positions. A forward
writes each new token's keys and values at its row's own position (an indexed write, so
rows of any lengths share one call) and attends through a 4-D mask over the first ``L``
positions of every slot, with explicit position ids: the model's own attention code runs,
only the cache object and the mask are ours. The buffer's last position is scratch: rows
that are idle, and padding, write there.

:func:`decode_step` is one token for rows ``[0, B)``: sample from the logits the previous
forward left (on the device: temperature, top-p, a hash of each row's seed and token index),
feed the sampled token, keep the new logits. Its shapes depend only on ``(B, L, mode)`` and
it never reads a value back to the host, so a CUDA graph can replay it (:mod:`.graphs`).
"""
from __future__ import annotations

from typing import Any

import torch
from transformers import DynamicCache
from transformers.cache_utils import Cache, DynamicLayer

from agentgym_core import phase

from .sampling import counter_uniforms, sample_fixed, seed_words

#: Attention implementations whose mask format is known here (``sdpa``: boolean, ``eager``:
#: additive). Others (flash, flex) cannot take a per-row 4-D mask: the engine falls back.
MASK_FORMATS = ("sdpa", "eager")


class StaticUnusable(RuntimeError):
    """The static path cannot run this model; the message says why."""


class SlotKV:
    """Keys and values of every slot, per layer; allocated at a layer's first write (so heads,
    head size and dtype come from the model itself) and grown, by doubling, up to *max_capacity*."""

    def __init__(self, slots: int, capacity: int, max_capacity: int) -> None:
        self.slots, self.capacity, self.max_capacity = slots, capacity, max_capacity
        self.layers: list[tuple[torch.Tensor, torch.Tensor]] = []
        #: Bumped whenever the buffers move (growth): graphs captured on the old ones are stale.
        self.version = 0

    @property
    def scratch(self) -> int:
        """The position idle rows and padding write to (never attended by a valid row)."""
        return self.capacity - 1

    def layer(self, index: int, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if index == len(self.layers):
            shape = (self.slots, like.shape[1], self.capacity, like.shape[3])
            # zeros, not empty: an idle row attends to whatever a slot holds, and it must be finite
            self.layers.append((like.new_zeros(shape), like.new_zeros(shape)))
        return self.layers[index]

    def ensure(self, need: int) -> bool:
        """Room for *need* valid positions per slot (plus scratch); True if the buffers moved."""
        if need + 1 <= self.capacity:
            return False
        if need + 1 > self.max_capacity:
            raise ValueError(f"a request needs {need} tokens in its slot, more than engine.slot_tokens "
                             f"({self.max_capacity - 1}); raise engine.slot_tokens or shorten the episode")
        capacity = self.capacity
        while capacity < need + 1:
            capacity *= 2
        capacity = min(capacity, self.max_capacity)
        moved = []
        for k, v in self.layers:
            nk, nv = k.new_zeros(k.shape[0], k.shape[1], capacity, k.shape[3]), v.new_zeros(v.shape[0], v.shape[1], capacity, v.shape[3])
            nk[:, :, : self.capacity - 1], nv[:, :, : self.capacity - 1] = k[:, :, :-1], v[:, :, :-1]
            moved.append((nk, nv))
        self.layers, self.capacity = moved, capacity
        self.version += 1
        return True

    def copy(self, src: int, dst: int, n: int) -> None:
        """Positions ``[0, n)`` of slot *src* into slot *dst*."""
        if n and src != dst:
            for k, v in self.layers:
                k[dst, :, :n] = k[src, :, :n]
                v[dst, :, :n] = v[src, :, :n]

    def take(self, slot: int, n: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """A compact copy of a slot's first *n* positions (an episode moved out of its slot)."""
        return [(k[slot, :, :n].clone(), v[slot, :, :n].clone()) for k, v in self.layers]

    def put(self, slot: int, kv: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        """Write back what :meth:`take` returned."""
        for (k, v), (ck, cv) in zip(self.layers, kv):
            n = ck.shape[1]
            k[slot, :, :n], v[slot, :, :n] = ck, cv


class _SlotLayer(DynamicLayer):
    """One layer's view of :class:`SlotKV` for one forward: where each new token goes, what to attend."""

    def __init__(self, kv: SlotKV, index: int, plan: dict[str, Any]) -> None:
        super().__init__()
        self.kv, self.index, self.plan = kv, index, plan
        self.is_initialized = True
        self.keys = self.values = torch.empty(0)

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        pass

    def get_seq_length(self) -> int:  # positions are explicit; nothing may be inferred from a length
        return 0

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any):
        k, v = self.kv.layer(self.index, key_states)
        rows, cols, length = self.plan["rows"], self.plan["cols"], self.plan["length"]
        # [rows, :, cols] selects [batch, new, heads, dim]: the new tokens' keys at their own positions
        k[rows, :, cols] = key_states.transpose(1, 2).to(k.dtype)
        v[rows, :, cols] = value_states.transpose(1, 2).to(v.dtype)
        if self.plan["leading"]:  # rows are slots [0, B): a view, no copy
            batch = key_states.shape[0]
            return k[:batch, :, :length], v[:batch, :, :length]
        flat = rows[:, 0]
        return k[flat, :, :length], v[flat, :, :length]


class SlotCache(DynamicCache):
    """The model's cache argument for one forward over slots (see :class:`_SlotLayer`)."""

    def __init__(self, kv: SlotKV, layers: int, plan: dict[str, Any]) -> None:
        Cache.__init__(self, layers=[_SlotLayer(kv, i, plan) for i in range(layers)])


def attention_mask(write: torch.Tensor, valid: torch.Tensor, length: int, impl: str, dtype: torch.dtype) -> torch.Tensor:
    """``[rows, 1, new, length]``: a valid token attends to every position up to its own; an
    idle or padding one only to position 0 (anything finite will do, its output is dropped)."""
    keys = torch.arange(length, device=write.device)
    allowed = torch.where(valid[..., None], keys <= write[..., None], keys == 0)[:, None]
    if impl == "eager":
        return torch.zeros(allowed.shape, dtype=dtype, device=write.device).masked_fill_(~allowed, torch.finfo(dtype).min)
    return allowed


def forward_slots(model: Any, cache_arg: str, kv: SlotKV, layers: int, impl: str, *, ids: torch.Tensor,
                  positions: torch.Tensor, write: torch.Tensor, valid: torch.Tensor, length: int,
                  rows: torch.Tensor | None = None) -> torch.Tensor:
    """Run ``ids [B, n]`` through *model*, writing keys/values at ``write [B, n]`` of slots *rows*
    (``None``: slots ``[0, B)``); returns the float32 logits after each row's last column ``[B, vocab]``."""
    leading = rows is None
    if leading:
        rows = torch.arange(ids.shape[0], device=ids.device)
    plan = {"rows": rows[:, None], "cols": write, "length": length, "leading": leading}
    mask = attention_mask(write, valid, length, impl, kv.layers[0][0].dtype if kv.layers else model.dtype)
    out = model(input_ids=ids, position_ids=positions, attention_mask=mask, use_cache=True, logits_to_keep=1,
                **{cache_arg: SlotCache(kv, layers, plan)})
    return out.logits[:, -1].float()


class StepState:
    """The decode loop's per-slot state, on the device; the host writes it only between steps."""

    def __init__(self, slots: int, vocab: int, ring: int, stops: int, device: torch.device) -> None:
        def zeros(*shape: int, dtype: torch.dtype = torch.int64) -> torch.Tensor:
            return torch.zeros(*shape, dtype=dtype, device=device)

        self.ring = ring
        self.pos, self.count, self.max_new = zeros(slots), zeros(slots), zeros(slots)  # valid KV length; tokens made
        self.active = zeros(slots, dtype=torch.bool)
        self.temperature, self.top_p = zeros(slots, dtype=torch.float32), zeros(slots, dtype=torch.float32)
        self.seed_lo, self.seed_hi = zeros(slots), zeros(slots)
        self.stop_ids = torch.full((slots, stops), -1, dtype=torch.int64, device=device)
        self.logits = zeros(slots, vocab, dtype=torch.float32)  # next-token logits of each slot
        # The last `ring` tokens of each row (index count % ring): the host reads them every sync.
        self.ring_tokens, self.ring_logprobs = zeros(slots, ring), zeros(slots, ring, dtype=torch.float32)
        #: False turns every row idle: a step then changes nothing but scratch (graph warm-up).
        self.enabled = torch.ones(1, dtype=torch.bool, device=device)

    def move(self, src: torch.Tensor, dst: torch.Tensor) -> None:
        """Rows *src* continue as rows *dst* (the rows *src* go idle)."""
        for name in ("pos", "count", "max_new", "active", "temperature", "top_p", "seed_lo", "seed_hi", "stop_ids",
                     "logits", "ring_tokens", "ring_logprobs"):
            t = getattr(self, name)
            t[dst] = t[src]
        self.active[src] = False

    def arm(self, slots: list[int], lengths: list[int], params: list[Any], seeds: list[int],
            stop_ids: list[list[int]]) -> None:
        """Start rows *slots*: prompts of *lengths* already prefilled, each sampled by its
        ``SamplingParams`` and seed, stopping at its stop ids (at most ``stop_ids.shape[1]``)."""
        dev = self.pos.device
        idx = torch.tensor(slots, device=dev)
        words = [seed_words(seed) for seed in seeds]
        self.pos[idx] = torch.tensor(lengths, device=dev)
        self.count[idx] = 0
        self.max_new[idx] = torch.tensor([q.max_new_tokens for q in params], device=dev)
        self.temperature[idx] = torch.tensor([float(q.temperature) for q in params], device=dev)
        self.top_p[idx] = torch.tensor([float(q.top_p) for q in params], device=dev)
        self.seed_lo[idx] = torch.tensor([w[0] for w in words], device=dev)
        self.seed_hi[idx] = torch.tensor([w[1] for w in words], device=dev)
        self.stop_ids[idx] = torch.tensor([ids + [-1] * (self.stop_ids.shape[1] - len(ids)) for ids in stop_ids],
                                          device=dev)
        self.active[idx] = True

    def widen_stops(self, width: int) -> None:
        if width > self.stop_ids.shape[1]:
            pad = torch.full((self.stop_ids.shape[0], width - self.stop_ids.shape[1]), -1, dtype=torch.int64,
                             device=self.stop_ids.device)
            self.stop_ids = torch.cat([self.stop_ids, pad], dim=1)


def decode_step(model: Any, cache_arg: str, kv: SlotKV, layers: int, impl: str, st: StepState, batch: int,
                length: int, mode: str, *, may_sync: bool) -> None:
    """One token for every active slot in ``[0, batch)``: sample, record, feed; attention over
    the first *length* positions (the caller makes sure every active row's next position is in it)."""
    live = st.active[:batch] & st.enabled
    logits, count = st.logits[:batch], st.count[:batch]
    u = counter_uniforms(st.seed_lo[:batch], st.seed_hi[:batch], count)
    token = sample_fixed(logits, st.temperature[:batch], st.top_p[:batch], u, mode, may_sync=may_sync)
    logprob = logits.gather(1, token[:, None])[:, 0] - torch.logsumexp(logits, dim=-1)
    rows, col = torch.arange(batch, device=logits.device), count % st.ring
    st.ring_tokens[rows, col] = torch.where(live, token, st.ring_tokens[rows, col])
    st.ring_logprobs[rows, col] = torch.where(live, logprob, st.ring_logprobs[rows, col])
    stop = live & ((token[:, None] == st.stop_ids[:batch]).any(-1) | (count + 1 >= st.max_new[:batch]))
    pos = st.pos[:batch]
    write = torch.where(live, pos, torch.full_like(pos, kv.scratch))
    st.logits[:batch] = forward_slots(model, cache_arg, kv, layers, impl, ids=token[:, None], positions=pos[:, None],
                                      write=write[:, None], valid=live[:, None], length=length)
    step = live.to(torch.int64)
    st.pos[:batch] += step
    st.count[:batch] += step
    st.active[:batch] &= ~stop


def prefill(model: Any, cache_arg: str, kv: SlotKV, layers: int, impl: str, st: StepState,
            rows: list[tuple[int, list[int], int]], budget: int) -> None:
    """Run each ``(slot, new tokens, start position)`` into its slot and keep the logits after its
    last token, in as few forwards as fit *budget* padded tokens; similar lengths go together
    (left-padded, so every row's last token is the last column)."""
    device = st.logits.device
    order = sorted(rows, key=lambda r: len(r[1]))
    while order:
        group, width, tokens = [], 0, 0
        for row in order:
            wider = max(width, len(row[1]))
            padded = wider * (len(group) + 1)
            # a row joins while the group fits the budget and padding stays under a quarter of it
            if group and (padded > budget or 4 * (padded - tokens - len(row[1])) > padded):
                break
            group.append(row)
            width, tokens = wider, tokens + len(row[1])
        order = order[len(group):]
        n = width
        ids = torch.zeros(len(group), n, dtype=torch.int64)
        positions = torch.zeros(len(group), n, dtype=torch.int64)
        write = torch.full((len(group), n), kv.scratch, dtype=torch.int64)
        valid = torch.zeros(len(group), n, dtype=torch.bool)
        for i, (_, new, start) in enumerate(group):
            pad = n - len(new)
            ids[i, pad:] = torch.tensor(new)
            positions[i, pad:] = write[i, pad:] = torch.arange(start, start + len(new))
            valid[i, pad:] = True
        slots = torch.tensor([slot for slot, _, _ in group], device=device)
        length = max(start + len(new) for _, new, start in group)
        work = dict(tokens=tokens, head=len(group),
                    attended=sum(len(new) * start + len(new) * (len(new) + 1) / 2 for _, new, start in group))
        with phase("prefill", **work):
            st.logits[slots] = forward_slots(
                model, cache_arg, kv, layers, impl, ids=ids.to(device), positions=positions.to(device),
                write=write.to(device), valid=valid.to(device), length=length, rows=slots)


def check_model(model: Any, config: Any, tokenizer: Any, *, cache_arg: str, kv: SlotKV, layers: int, impl: str) -> int:
    """Raise :class:`StaticUnusable` unless the slots serve *model* exactly; returns its vocabulary size.

    The attention must take a per-row mask and attend to every position (no sliding window),
    and a probe sequence, part prefilled into slot 0 and the rest decoded beside an idle row,
    must give the log-probs of one plain forward pass over the whole sequence.
    """
    if impl not in MASK_FORMATS:
        raise StaticUnusable(f"the model's attention implementation {impl!r} takes no per-row mask "
                             f"(static decode runs with {' or '.join(MASK_FORMATS)})")
    window = getattr(config, "sliding_window", None) if getattr(config, "use_sliding_window", True) is not False else None
    kinds = set(getattr(config, "layer_types", None) or ()) - {"full_attention"}
    if kinds or (window and window < kv.max_capacity - 1):
        raise StaticUnusable(f"the model has {'/'.join(sorted(kinds)) or 'sliding-window'} attention layers, "
                             "which the static KV slots do not implement")
    try:
        err, vocab = _probe(model, tokenizer, cache_arg=cache_arg, kv=kv, layers=layers, impl=impl)
    except Exception as exc:  # noqa: BLE001 - the model does not run this way: say how it failed
        raise StaticUnusable(f"its self-check failed: {type(exc).__name__}: {exc}") from exc
    tol = 1e-3 if kv.layers[0][0].dtype == torch.float32 else 0.15
    if not err <= tol:
        raise StaticUnusable(f"its self-check differs from a plain forward pass by {err:.3g} (tolerance {tol})")
    return vocab


def _probe(model: Any, tokenizer: Any, **run: Any) -> tuple[float, int]:
    kv = run["kv"]
    device = next(model.parameters()).device
    probe = list(tokenizer("A probe: the static slots must give what a plain forward pass gives.",
                           add_special_tokens=False)["input_ids"])[:8]
    ids = torch.tensor([probe], device=device)
    want = torch.log_softmax(model(input_ids=ids).logits[0].float(), dim=-1)
    part = len(probe) - 3

    def t(rows: list) -> torch.Tensor:
        return torch.tensor(rows, device=device)

    got = [forward_slots(model, ids=ids[:, :part], positions=t([list(range(part))]), write=t([list(range(part))]),
                         valid=t([[True] * part]), length=part, rows=t([0]), **run)[0]]
    for p in range(part, len(probe)):
        got.append(forward_slots(model, ids=t([[probe[p]], [0]]), positions=t([[p], [0]]), write=t([[p], [kv.scratch]]),
                                 valid=t([[True], [False]]), length=p + 1, **run)[0])
    err = float((torch.log_softmax(torch.stack(got), dim=-1) - want[part - 1:]).abs().max())
    return err, got[0].shape[-1]
