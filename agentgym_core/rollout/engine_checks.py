"""The engine contract as reusable checks, run by every engine plugin's tests (hf, vllm, yours).

Each check takes a ready engine and raises ``AssertionError`` naming the broken rule;
:func:`check_engine` runs them all. They need no torch: a reference forward pass for logprobs is
the engine plugin's own test.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from ..engine import Engine, GenerationRequest, SamplingParams


def _prompt(engine: Any, text: str) -> list[int]:
    return list(engine.tokenizer(text, add_special_tokens=False)["input_ids"])


def check_shapes_and_limits(engine: Any) -> None:
    """One result per request, one logprob per token, max_new_tokens respected, logprobs <= 0."""
    reqs = [
        GenerationRequest(_prompt(engine, "Hello, who are you?"), SamplingParams(max_new_tokens=5, seed=1)),
        GenerationRequest(_prompt(engine, "A longer prompt: list three colours, then stop."), SamplingParams(max_new_tokens=9, seed=2)),
    ]
    results = engine.generate(reqs)
    assert len(results) == len(reqs), "generate must return one result per request, in order"
    for req, res in zip(reqs, results):
        assert 1 <= len(res.token_ids) <= req.params.max_new_tokens, "max_new_tokens not respected"
        assert len(res.logprobs) == len(res.token_ids), "one logprob per sampled token"
        assert all(lp <= 1e-5 for lp in res.logprobs), "logprobs must be log-probabilities (<= 0)"
        assert res.finish_reason in ("stop", "length")
        if res.finish_reason == "length":
            assert len(res.token_ids) == req.params.max_new_tokens
        assert 0 < res.prefill_tokens <= len(req.prompt_ids)


def check_seed_determinism(engine: Any) -> None:
    """The same request with the same seed gives the same tokens, alone or inside a batch."""
    prompt = _prompt(engine, "Tell me a story about a cat.")
    req = GenerationRequest(prompt, SamplingParams(max_new_tokens=8, seed=123, temperature=1.0))
    other = GenerationRequest(_prompt(engine, "Other, longer prompt in the same batch here."), SamplingParams(max_new_tokens=8, seed=7))
    alone = engine.generate([req])[0]
    again = engine.generate([req])[0]
    batched = engine.generate([other, req])[1]
    assert alone.token_ids == again.token_ids, "same seed must give the same tokens"
    assert alone.token_ids == batched.token_ids, "a request's tokens must not depend on its batch (padding bug?)"


def check_stop_token(engine: Any) -> None:
    """A stop token id ends generation and is kept as the last token."""
    prompt = _prompt(engine, "Count: one two three")
    free = engine.generate([GenerationRequest(prompt, SamplingParams(max_new_tokens=6, temperature=0.0))])[0]
    stop_at = free.token_ids[min(2, len(free.token_ids) - 1)]
    res = engine.generate([GenerationRequest(prompt, SamplingParams(max_new_tokens=6, temperature=0.0, stop_token_ids=(stop_at,)))])[0]
    first = free.token_ids.index(stop_at)
    assert res.token_ids == free.token_ids[: first + 1], "generation must stop right after a stop token id"
    assert res.finish_reason == "stop"


def check_cache_reuse(engine: Any) -> None:
    """A follow-up request under the same cache key prefills only its new tokens and samples the same."""
    prompt = _prompt(engine, "System: you play a game. User: start.")
    params = SamplingParams(max_new_tokens=6, temperature=0.0)
    first = engine.generate([GenerationRequest(prompt, params, cache_key="ep")])[0]
    follow = prompt + first.token_ids + _prompt(engine, " Observation: you see a door.")
    cached = engine.generate([GenerationRequest(follow, params, cache_key="ep")])[0]
    fresh = engine.generate([GenerationRequest(follow, params)])[0]
    engine.release("ep")
    assert cached.token_ids == fresh.token_ids, "reusing the KV cache must not change what is sampled"
    assert cached.prefill_tokens < len(follow) - len(prompt) + 2, (
        f"a turn should prefill only its new tokens: prefilled {cached.prefill_tokens} of {len(follow)}"
    )
    assert fresh.prefill_tokens == len(follow)


ALL_CHECKS = (check_shapes_and_limits, check_seed_determinism, check_stop_token, check_cache_reuse)


def check_declarations(engine: Any) -> None:
    """An :class:`~agentgym_core.Engine` that says how a trainer works with it: what ``update_weights``
    receives (``shares_weights``) and who places it on a device (``placement``; ``"option"`` needs a
    ``device`` field in its ``Config``)."""
    cls = type(engine)
    assert isinstance(engine, Engine), f"{cls.__name__} must subclass agentgym_core.Engine"
    assert isinstance(engine.shares_weights, bool), "shares_weights must be True or False"
    assert engine.placement in ("option", "self"), f"placement must be 'option' or 'self', not {engine.placement!r}"
    if engine.placement == "option":
        config = getattr(cls, "Config", None)
        fields = {f.name for f in dataclasses.fields(config)} if dataclasses.is_dataclass(config) else set()
        assert "device" in fields, (f"{cls.__name__}.placement is 'option': its Config needs a device field "
                                    "(or set placement = 'self' if it places itself)")


def check_engine(engine: Any, *, cache: bool = True) -> None:
    """Every check on a ready *engine*; *cache*: also the prefix-cache rule (an engine that caches
    nothing prefills whole prompts: pass ``cache=False``)."""
    for check in (check_declarations, *ALL_CHECKS):
        if check is not check_cache_reuse or cache:
            check(engine)
