"""What the plain and the static decoder share: the model they run, and the rules both follow.

:class:`DecodeTarget` is handed to each decoder by :class:`~agentgym_engine_hf.engine.HFEngine`
(the decoders never reach back into the engine); the functions are the stop, prefix and
eval-mode rules that make the two paths stop and reuse keys/values at the same places.
"""
from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from agentgym_core import SamplingParams

#: Shorter common prefixes (and ones under a fifth of the prompt) are recomputed.
MIN_SHARED_PREFIX = 64
#: Cached episodes searched for a shared prefix (the most recently used ones).
PREFIX_CANDIDATES = 64


@dataclass
class DecodeTarget:
    """The model a decoder runs and what every request shares: its tokenizer, device, the
    keyword its forward takes a cache by, the end-of-sequence ids, and the source of seeds
    for requests that bring none (one for both decoders)."""

    model: Any
    tokenizer: Any
    device: torch.device
    cache_arg: str
    eos_ids: frozenset[int]
    rng: random.Random = field(default_factory=random.Random)

    def seed(self, params: SamplingParams) -> int:
        """The request's own seed, else a fresh one."""
        return params.seed if params.seed is not None else self.rng.getrandbits(63)

    def stop_ids(self, params: SamplingParams) -> frozenset[int]:
        return self.eos_ids | frozenset(params.stop_token_ids)


def check_request(prompt: list[int], params: SamplingParams) -> None:
    if not prompt:
        raise ValueError("GenerationRequest.prompt_ids is empty")
    if params.max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {params.max_new_tokens}")


def common_prefix(a: list[int], b: list[int], limit: int) -> int:
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


def worth_sharing(shared: int, prompt_length: int) -> bool:
    """Whether a common prefix of *shared* tokens is worth starting a *prompt_length*-token prompt
    from. A short prefix before a long rest does not pay: a prefill past cached tokens needs an
    explicit attention mask, which on CPU took 1.9x longer for 5.6k tokens after 100."""
    return shared >= MIN_SHARED_PREFIX and 4 * shared >= prompt_length - shared


def hits_stop(tokenizer: Any, tokens: list[int], stops: tuple[str, ...]) -> bool:
    """Whether the text of *tokens*' tail contains one of the stop strings."""
    longest = max(len(s) for s in stops)
    tail = tokenizer.decode(tokens[-(longest + 2) :], skip_special_tokens=False)
    return any(s in tail for s in stops)


@contextlib.contextmanager
def eval_mode(model: Any) -> Iterator[None]:
    """*model* in eval mode for the block; train mode again afterwards if it was training."""
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        if was_training:
            model.train()
