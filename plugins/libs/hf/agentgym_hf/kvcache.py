"""KV caches the hf engine and the rl trainer share: per-layer buffers with room to grow, so
appending tokens writes in place instead of copying the whole cache (``torch.cat``).

transformers' ``DynamicLayer`` appends with ``torch.cat``, copying the whole cache for every
token; at a few thousand tokens of context that copy was most of a decode step's time and
made a rollout's cost grow with the square of its turns.
"""
from __future__ import annotations

import inspect
from typing import Any

import torch
from transformers import DynamicCache
from transformers.cache_utils import Cache, DynamicLayer

#: Per layer: keys, values of shape ``[batch, heads, capacity, dim]``; the first positions are
#: valid (as many as the owner says), the rest is room to append into without copying.
KV = list[tuple[torch.Tensor, torch.Tensor]]


class SlabLayer(DynamicLayer):
    """A cache layer in a preallocated buffer: new tokens are written in place."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, length: int) -> None:
        super().__init__()
        self._k, self._v, self._n = keys, values, length
        self.device = keys.device
        self.is_initialized = True
        self._expose()

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:  # already set up
        pass

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any):
        n = self._n
        self._k, self._v = append(self._k, n, key_states), append(self._v, n, value_states)
        self._n = n + key_states.shape[-2]
        self._expose()
        return self.keys, self.values

    @property
    def buffers(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The whole key and value buffers (valid up to this layer's length)."""
        return self._k, self._v

    def _expose(self) -> None:
        self.keys, self.values = self._k[:, :, : self._n], self._v[:, :, : self._n]


class SlabCache(DynamicCache):
    """A ``DynamicCache`` whose layers are :class:`SlabLayer` buffers."""

    def __init__(self, layers: list[tuple[torch.Tensor, torch.Tensor, int]]) -> None:
        Cache.__init__(self, layers=[SlabLayer(k, v, n) for k, v, n in layers])


def append(buf: torch.Tensor, used: int, new: torch.Tensor) -> torch.Tensor:
    """Write *new* after the first *used* positions of *buf* (grown by half again when full:
    amortised O(1) per token); returns the buffer, a new one if it grew."""
    m = new.shape[2]
    if used + m > buf.shape[2]:
        buf = grown(buf, used, max(used + m, buf.shape[2] * 3 // 2))
    buf[:, :, used : used + m] = new
    return buf


def grown(t: torch.Tensor, used: int, capacity: int) -> torch.Tensor:
    """A new buffer of *capacity* positions holding the first *used* positions of *t*."""
    out = t.new_empty(t.shape[0], t.shape[1], capacity, t.shape[3])
    out[:, :, :used] = t[:, :, :used]
    return out


def left_padded(kv: KV, lengths: list[int], width: int, room: int) -> tuple[torch.Tensor, torch.Tensor, int]:
    """One layer's per-episode caches stacked into a zero-left-padded batch buffer with *room* free slots."""
    k0 = kv[0][0]
    shape = (len(kv), k0.shape[1], width + room, k0.shape[3])
    keys, values = k0.new_zeros(shape), k0.new_zeros(shape)
    for i, ((k, v), n) in enumerate(zip(kv, lengths)):
        keys[i, :, width - n : width] = k[0, :, :n]
        values[i, :, width - n : width] = v[0, :, :n]
    return keys, values, width


def cache_arg(model: Any) -> str:
    """The keyword *model*'s forward takes a KV cache by: transformers >= 5.x names it
    ``cache``, older versions ``past_key_values``."""
    return "cache" if "cache" in inspect.signature(type(model).forward).parameters else "past_key_values"


def out_cache(out: Any) -> Any:
    """The KV cache of a model output (``cache`` or ``past_key_values``)."""
    cache = getattr(out, "cache", None)
    return cache if cache is not None else out.past_key_values


def layers(cache: Any) -> KV:
    """Each layer's valid keys and values."""
    return [(layer.keys, layer.values) for layer in cache.layers]


def buffers(cache: Any) -> KV:
    """Each layer's keys and values: the whole buffers of a :class:`SlabCache`'s layers."""
    return [layer.buffers if isinstance(layer, SlabLayer) else (layer.keys, layer.values) for layer in cache.layers]
