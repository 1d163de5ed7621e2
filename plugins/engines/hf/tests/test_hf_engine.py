"""The hf engine: the shared engine contract, exact logprobs under padding, weights, loading.

Most tests run both decode paths (``decode``: ``plain``, ``static``): they must agree.
"""
from __future__ import annotations

import pytest
import torch
from agentgym_engine_hf.engine import HFEngine
from agentgym_hf.loading import load_model, tiny_random_model

from agentgym_core.engine import GenerationRequest, SamplingParams
from agentgym_core.rollout import engine_checks


@pytest.fixture(params=["plain", "static"])
def decode(request):
    return request.param


@pytest.mark.parametrize("check", engine_checks.ALL_CHECKS, ids=lambda c: c.__name__)
def test_engine_contract(check, hf_tokenizer, hf_tiny_model, decode):
    check(HFEngine(hf_tiny_model, hf_tokenizer, decode=decode))


def _reference(model, prompt, tokens):
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([prompt + tokens])).logits[0].float(), dim=-1)
    return [float(logp[len(prompt) - 1 + i, t]) for i, t in enumerate(tokens)]


def test_batched_logprobs_match_forward_pass(hf_tokenizer, hf_tiny_model, decode):
    engine = HFEngine(hf_tiny_model, hf_tokenizer, decode=decode)
    prompts = [list(range(200, 200 + n)) for n in (3, 17, 40)]
    reqs = [GenerationRequest(p, SamplingParams(max_new_tokens=10, seed=i, top_p=0.9)) for i, p in enumerate(prompts)]
    for req, res in zip(reqs, engine.generate(reqs)):
        ref = _reference(hf_tiny_model, req.prompt_ids, res.token_ids)
        assert max(abs(a - b) for a, b in zip(ref, res.logprobs)) < 1e-4


def test_cache_reuse_across_turns_is_exact(hf_tokenizer, hf_tiny_model, decode):
    engine = HFEngine(hf_tiny_model, hf_tokenizer, decode=decode)
    prompt = list(range(300, 330))
    params = SamplingParams(max_new_tokens=8, seed=5)
    for turn in range(3):
        res = engine.generate([GenerationRequest(prompt, params, cache_key="ep"),
                               GenerationRequest(list(range(50, 60)), params, cache_key="other")])[0]
        if turn:
            assert res.prefill_tokens <= 5 + 1  # only the new observation (+ last sampled token)
        assert max(abs(a - b) for a, b in zip(_reference(hf_tiny_model, prompt, res.token_ids), res.logprobs)) < 1e-4
        prompt = prompt + res.token_ids + list(range(400, 405))
    engine.release("ep")
    assert "ep" not in engine.plain.cache


def test_a_group_with_one_prompt_prefills_it_once_and_samples_as_if_alone(hf_tokenizer, hf_tiny_model, decode):
    engine = HFEngine(hf_tiny_model, hf_tokenizer, decode=decode)
    prompt = list(range(200, 240))
    group = [GenerationRequest(prompt, SamplingParams(max_new_tokens=8, seed=s), cache_key=f"ep{s}") for s in range(4)]
    results = engine.generate(group + [GenerationRequest(list(range(60, 70)), SamplingParams(max_new_tokens=8, seed=9))])
    assert [r.prefill_tokens for r in results] == [40, 0, 0, 0, 10]
    for s, res in enumerate(results[:4]):
        alone = HFEngine(hf_tiny_model, hf_tokenizer, decode=decode).generate([GenerationRequest(prompt, SamplingParams(max_new_tokens=8, seed=s))])[0]
        assert res.token_ids == alone.token_ids
        assert max(abs(a - b) for a, b in zip(_reference(hf_tiny_model, prompt, res.token_ids), res.logprobs)) < 1e-4
    assert len({tuple(r.token_ids) for r in results[:4]}) > 1  # the group still samples different replies
    # each episode's cache continues on its own afterwards
    nxt = [GenerationRequest(prompt + r.token_ids + [5, 6], SamplingParams(max_new_tokens=4, seed=1), cache_key=f"ep{s}")
           for s, r in enumerate(results[:4])]
    assert all(r.prefill_tokens <= 3 for r in engine.generate(nxt))


def test_stop_string_ends_generation(hf_tokenizer, hf_tiny_model, decode):
    engine = HFEngine(hf_tiny_model, hf_tokenizer, decode=decode)
    prompt = list(range(500, 520))
    free = engine.generate([GenerationRequest(prompt, SamplingParams(max_new_tokens=12, temperature=0))])[0]
    text = hf_tokenizer.decode(free.token_ids[:4])
    stop = text[-3:]
    res = engine.generate([GenerationRequest(prompt, SamplingParams(max_new_tokens=12, temperature=0, stop_strings=(stop,)))])[0]
    assert res.finish_reason == "stop"
    assert stop in hf_tokenizer.decode(res.token_ids)
    assert stop not in hf_tokenizer.decode(res.token_ids[:-1])


def test_live_policy_updates_are_seen_and_train_mode_restored(hf_tokenizer, decode):
    model = tiny_random_model(hf_tokenizer, seed=2)
    engine = HFEngine(model, hf_tokenizer, decode=decode)
    req = GenerationRequest(list(range(100, 110)), SamplingParams(max_new_tokens=6, temperature=0))
    model.train()
    before = engine.generate([req])[0]
    assert model.training, "generate must restore train mode"
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.5)
    engine.update_weights(model)  # a no-op for a shared model, but clears caches
    after = engine.generate([req])[0]
    assert after.logprobs != before.logprobs


def test_engine_from_folder_and_update_weights(hf_tokenizer, tmp_path, decode):
    src = tiny_random_model(hf_tokenizer, seed=3)
    src.save_pretrained(tmp_path)
    hf_tokenizer.save_pretrained(tmp_path)
    engine = HFEngine(str(tmp_path), dtype="fp32", max_batch_size=2, decode=decode)
    req = GenerationRequest(list(range(100, 110)), SamplingParams(max_new_tokens=5, temperature=0))
    base = engine.generate([req])[0]
    other = tiny_random_model(hf_tokenizer, seed=4)
    engine.update_weights(other.state_dict())
    new = engine.generate([req])[0]
    assert new.logprobs == pytest.approx(_reference(other, req.prompt_ids, new.token_ids), abs=1e-4)
    assert new.logprobs != base.logprobs
    with pytest.raises(ValueError, match="does not fit"):
        engine.update_weights({"nonsense.weight": torch.zeros(1)})


@pytest.mark.slow
def test_bundled_default_model_loads_and_generates():
    model, tokenizer = load_model("smollm2-135m-instruct", dtype="fp32")
    engine = HFEngine(model, tokenizer)
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "Say hello."}], add_generation_prompt=True)
    if not isinstance(prompt, list):
        prompt = prompt["input_ids"]
    res = engine.generate([GenerationRequest(list(prompt), SamplingParams(max_new_tokens=12, temperature=0))])[0]
    assert tokenizer.decode(res.token_ids).strip()


def test_peft_policy_is_shared_and_logprobs_exact(hf_tokenizer, decode):
    peft = pytest.importorskip("peft", reason="peft is needed for the LoRA policy case")
    model = peft.get_peft_model(
        tiny_random_model(hf_tokenizer, seed=6),
        peft.LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False),
    )
    engine = HFEngine(model, hf_tokenizer, decode=decode)
    prompt = list(range(700, 720))
    res = engine.generate([GenerationRequest(prompt, SamplingParams(max_new_tokens=6, seed=0), cache_key="p")])[0]
    follow = prompt + res.token_ids + [5, 6, 7]
    res2 = engine.generate([GenerationRequest(follow, SamplingParams(max_new_tokens=4, seed=1), cache_key="p")])[0]
    assert res2.prefill_tokens <= 4
    for p, r in ((prompt, res), (follow, res2)):
        assert max(abs(a - b) for a, b in zip(_reference(model, p, r.token_ids), r.logprobs)) < 1e-4


def test_episodes_with_a_common_prefix_prefill_it_once(hf_tokenizer, hf_tiny_model, decode):
    """An env instruction in the system prompt: every episode's first prompt starts the same."""
    system = list(range(1000, 1100))  # 100 shared tokens
    prompts = [system + list(range(2000 + 7 * i, 2000 + 7 * i + 5 + i)) for i in range(3)]
    greedy = SamplingParams(max_new_tokens=6, temperature=0.0)
    engine = HFEngine(hf_tiny_model, hf_tokenizer, decode=decode)
    first = engine.generate([GenerationRequest(p, greedy, cache_key=f"ep{i}") for i, p in enumerate(prompts)])
    assert [r.prefill_tokens for r in first] == [105, 6, 7]  # the 2nd and 3rd run only their own tokens
    # A later call (an episode admitted when another ended) starts from a cached episode's prefix.
    late = system + list(range(3000, 3009))
    later = engine.generate([GenerationRequest(late, greedy, cache_key="ep9")])[0]
    assert later.prefill_tokens == 9
    for prompt, res in zip(prompts + [late], first + [later]):
        alone = HFEngine(hf_tiny_model, hf_tokenizer, share_prefixes=False).generate([GenerationRequest(prompt, greedy)])[0]
        assert res.token_ids == alone.token_ids
        assert max(abs(a - b) for a, b in zip(_reference(hf_tiny_model, prompt, res.token_ids), res.logprobs)) < 1e-4
    # Short common prefixes are recomputed, and the option turns sharing off.
    short = [list(range(1000, 1010)) + [2000 + i] * 3 for i in range(2)]
    assert [r.prefill_tokens for r in engine.generate([GenerationRequest(p, greedy) for p in short])] == [13, 13]
    off = HFEngine(hf_tiny_model, hf_tokenizer, share_prefixes=False, decode=decode)
    assert [r.prefill_tokens for r in off.generate([GenerationRequest(p, greedy) for p in prompts])] == [105, 106, 107]


def test_episode_buffers_stay_exact_over_many_turns_with_twins(hf_tokenizer, hf_tiny_model, decode):
    """Each episode's keys/values live in its own growing buffer, written in place turn after
    turn; a GRPO group starts from one shared prefill. Over 6 turns every reply must match a
    fresh engine that prefills the whole prompt (greedy) and a plain forward pass (logprobs)."""
    engine = HFEngine(hf_tiny_model, hf_tokenizer, decode=decode)
    fresh = HFEngine(hf_tiny_model, hf_tokenizer, share_prefixes=False)
    prompts = {f"ep{i}": list(range(300, 340)) if i < 3 else list(range(500, 530 + i)) for i in range(5)}
    greedy = SamplingParams(max_new_tokens=5, temperature=0.0)
    for turn in range(6):
        keys = sorted(prompts)
        results = engine.generate([GenerationRequest(prompts[k], greedy, cache_key=k) for k in keys])
        for k, res in zip(keys, results):
            alone = fresh.generate([GenerationRequest(prompts[k], greedy)])[0]
            assert res.token_ids == alone.token_ids, (turn, k)
            ref = _reference(hf_tiny_model, prompts[k], res.token_ids)
            assert max(abs(a - b) for a, b in zip(ref, res.logprobs)) < 1e-4, (turn, k)
            if turn:
                assert res.prefill_tokens <= 4 + 1 + turn % 3  # the new observation (+ the last sampled token)
            prompts[k] = prompts[k] + res.token_ids + [400 + turn, 401, 402 + int(k[2:]) % 2, 403 + turn % 3][: 3 + turn % 3]


def test_options_are_the_config_fields_and_a_misspelt_one_fails(hf_tokenizer, hf_tiny_model):
    from agentgym_core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"unknown option 'max_batchsize'.*max_batch_size"):
        HFEngine(hf_tiny_model, hf_tokenizer, max_batchsize=4)
    with pytest.raises(ConfigError, match="decode"):
        HFEngine(hf_tiny_model, hf_tokenizer, decode="fast")
    engine = HFEngine(hf_tiny_model, hf_tokenizer, max_batch_size=3, max_context=512)
    assert (engine.settings.max_batch_size, engine.max_batch_size, engine.max_context) == (3, 3, 512)
    assert engine.settings.decode == "plain" and engine.static is None
