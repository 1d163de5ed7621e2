"""``decode: static`` beyond what test_hf_engine.py checks on both paths: the plain path's greedy
tokens and stops under several chat templates, a turn prefilling exactly its new tokens, more
episodes than slots, seeded sampling in any batch, continuous batching, stale slots, options."""
from __future__ import annotations

import threading

import pytest
import torch
from agentgym_engine_hf.config import HFEngineConfig
from agentgym_engine_hf.engine import HFEngine

from agentgym_core.engine import GenerationRequest, SamplingParams

#: Chat templates whose prompts the engines must decode alike (ChatML is the tokenizer's own).
TEMPLATES = {
    "chatml": None,
    "llama3": ("{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n{{ m['content'] | trim }}"
               "<|eot_id|>{% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"),
    "gemma": ("{% for m in messages %}<start_of_turn>{{ 'model' if m['role'] == 'assistant' else m['role'] }}\n"
              "{{ m['content'] }}<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"),
}


def static(model, tokenizer, **options):
    return HFEngine(model, tokenizer, decode="static", **options)


def _reference(model, prompt, tokens):
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([prompt + tokens])).logits[0].float(), dim=-1)
    return [float(logp[len(prompt) - 1 + i, t]) for i, t in enumerate(tokens)]


def _chat_prompt(tokenizer, template, text):
    ids = tokenizer.apply_chat_template([{"role": "system", "content": "You play a game."}, {"role": "user", "content": text}],
                                        chat_template=template, add_generation_prompt=True)
    return list(ids if isinstance(ids, list) else ids["input_ids"])


@pytest.mark.parametrize("template", sorted(TEMPLATES))
def test_greedy_tokens_stops_and_logprobs_match_the_plain_path(template, hf_tokenizer, hf_tiny_model):
    plain, fast = HFEngine(hf_tiny_model, hf_tokenizer), static(hf_tiny_model, hf_tokenizer, sync_every=4)
    prompts = [_chat_prompt(hf_tokenizer, TEMPLATES[template], f"Room {i}: a door{', a key' * i}.") for i in range(4)]
    free = plain.generate([GenerationRequest(p, SamplingParams(max_new_tokens=14, temperature=0)) for p in prompts])
    # Stop strings that end the reply at different tokens (inside the 4-step sync window and at
    # its edge), plus the agent's usual ones that never occur here.
    stops = [(hf_tokenizer.decode(r.token_ids[: 2 + i])[-3:], "\nObservation:") for i, r in enumerate(free)]
    reqs = [GenerationRequest(p, SamplingParams(max_new_tokens=14 - i, temperature=0, stop_strings=s))
            for i, (p, s) in enumerate(zip(prompts, stops))]
    want, got = plain.generate(reqs), fast.generate(reqs)
    for req, a, b in zip(reqs, want, got):
        assert (b.token_ids, b.finish_reason, b.prefill_tokens) == (a.token_ids, a.finish_reason, a.prefill_tokens)
        assert max(abs(x - y) for x, y in zip(_reference(hf_tiny_model, req.prompt_ids, b.token_ids), b.logprobs)) < 1e-4
    assert any(r.finish_reason == "stop" for r in got)
    fast.close()


def test_turns_reuse_the_episode_slot_and_stay_exact(hf_tokenizer, hf_tiny_model):
    """Five episodes over six turns, three of them a GRPO group: every reply equals a fresh plain
    engine's (greedy) and a forward pass (log-probs); a turn prefills only its new tokens."""
    fast = static(hf_tiny_model, hf_tokenizer)
    fresh = HFEngine(hf_tiny_model, hf_tokenizer, share_prefixes=False)
    prompts = {f"ep{i}": list(range(300, 340)) if i < 3 else list(range(500, 530 + i)) for i in range(5)}
    greedy = SamplingParams(max_new_tokens=5, temperature=0.0)
    added: dict[str, list[int]] = {}
    for turn in range(6):
        keys = sorted(prompts)
        results = fast.generate([GenerationRequest(prompts[k], greedy, cache_key=k) for k in keys])
        for i, (k, res) in enumerate(zip(keys, results)):
            assert res.token_ids == fresh.generate([GenerationRequest(prompts[k], greedy)])[0].token_ids, (turn, k)
            ref = _reference(hf_tiny_model, prompts[k], res.token_ids)
            assert max(abs(a - b) for a, b in zip(ref, res.logprobs)) < 1e-4, (turn, k)
            if turn:  # the new observation only (the reply is in the slot); nothing for a twin of an earlier prompt
                twin = any(prompts[j] == prompts[k] for j in keys[:i])
                assert res.prefill_tokens == (0 if twin else len(added[k])), (turn, k)
        added = {k: [400 + turn, 401, 402 + int(k[2:]) % 2, 403 + turn % 3][: 3 + turn % 3] for k in keys}
        for k, res in zip(keys, results):
            prompts[k] = prompts[k] + res.token_ids + added[k]
    fast.close()


def test_more_episodes_than_slots_spill_and_come_back_exact(hf_tokenizer, hf_tiny_model):
    """Two slots, five episodes: parked episodes move out of their slot and back in, unchanged."""
    fast = static(hf_tiny_model, hf_tokenizer, max_batch_size=2)
    fresh = HFEngine(hf_tiny_model, hf_tokenizer, share_prefixes=False)
    prompts = {f"ep{i}": list(range(600 + 9 * i, 620 + 9 * i)) for i in range(5)}
    greedy = SamplingParams(max_new_tokens=4, temperature=0.0)
    for turn in range(3):
        keys = sorted(prompts)
        for k, res in zip(keys, fast.generate([GenerationRequest(prompts[k], greedy, cache_key=k) for k in keys])):
            assert res.token_ids == fresh.generate([GenerationRequest(prompts[k], greedy)])[0].token_ids, (turn, k)
            if turn:
                assert res.prefill_tokens == 2
            prompts[k] = prompts[k] + res.token_ids + [7, 8]
    assert len(fast.static.table.spilled) >= 3
    fast.release("ep0")
    fast.generate([GenerationRequest([1, 2, 3], greedy)])  # a release applies before the next admission
    assert "ep0" not in fast.static.table.spilled and all(s.key != "ep0" for s in fast.static.table.slots)
    fast.close()


@pytest.mark.slow
def test_seeded_sampling_repeats_in_any_batch_and_sync_interval(hf_tokenizer, hf_tiny_model):
    prompt = list(range(100, 130))
    params = [SamplingParams(max_new_tokens=12, seed=s, temperature=t, top_p=p)
              for s, t, p in ((1, 1.0, 1.0), (2, 0.8, 0.9), (3, 1.0, 0.5), (4, 0.0, 1.0))]
    reqs = [GenerationRequest(prompt[: 20 + 3 * i], q) for i, q in enumerate(params)]
    base = static(hf_tiny_model, hf_tokenizer).generate(reqs)
    other = static(hf_tiny_model, hf_tokenizer, sync_every=5, max_batch_size=3)
    mixed = other.generate([GenerationRequest(list(range(50, 90)), SamplingParams(max_new_tokens=9, seed=8)), *reversed(reqs)])[1:]
    alone = [other.generate([r])[0] for r in reqs]
    for a, b, c in zip(base, reversed(mixed), alone):
        assert a.token_ids == b.token_ids == c.token_ids
    assert len({tuple(r.token_ids) for r in base}) == 4
    other.close()


@pytest.mark.slow
def test_a_request_submitted_while_a_long_one_decodes_finishes_first(hf_tokenizer, hf_tiny_model):
    """Continuous batching: the short request does not wait for the long one's batch to drain,
    and a third one waiting for a slot takes the short one's slot as soon as it is free."""
    fast = static(hf_tiny_model, hf_tokenizer, max_batch_size=2)
    long_req = GenerationRequest(list(range(700, 720)), SamplingParams(max_new_tokens=150, temperature=1.0, seed=1))
    order: list[str] = []
    lock = threading.Lock()

    def note(name):
        return lambda _f: (lock.acquire(), order.append(name), lock.release())

    long_future = fast.submit(long_req)
    long_future.add_done_callback(note("long"))
    while fast.static.steps < 3:
        threading.Event().wait(0.01)
    futures = {name: fast.submit(GenerationRequest(list(range(n, n + 10)), SamplingParams(max_new_tokens=3, seed=2)))
               for name, n in (("short", 800), ("waiting", 810), ("third", 820))}
    for name, f in futures.items():
        f.add_done_callback(note(name))
    for f in [long_future, *futures.values()]:
        f.result(timeout=120)
    assert order[-1] == "long", order
    assert len(long_future.result().token_ids) > 3
    fast.close()


def test_finished_rows_leave_the_decode_batch(hf_tokenizer, hf_tiny_model):
    """The long request sits in the last slot; once the short ones end it moves down (keys and
    values copied), and the steps run over one row instead of four."""
    fast = static(hf_tiny_model, hf_tokenizer)
    reqs = [GenerationRequest(list(range(100 + 10 * i, 112 + 10 * i)), SamplingParams(max_new_tokens=30 if i == 3 else 2,
                              temperature=0.0)) for i in range(4)]
    got = fast.generate(reqs)
    assert [r.token_ids for r in got] == [r.token_ids for r in HFEngine(hf_tiny_model, hf_tokenizer).generate(reqs)]
    assert fast.static.steps == 30 and fast.static.row_steps < 4 * 2 + 30
    fast.close()


def test_update_weights_is_seen_and_stale_slots_dropped(hf_tokenizer, tmp_path):
    from agentgym_hf.loading import tiny_random_model

    src = tiny_random_model(hf_tokenizer, seed=3)
    src.save_pretrained(tmp_path)
    hf_tokenizer.save_pretrained(tmp_path)
    engine = HFEngine(str(tmp_path), dtype="fp32", decode="static")
    req = GenerationRequest(list(range(100, 110)), SamplingParams(max_new_tokens=5, temperature=0), cache_key="ep")
    before = engine.generate([req])[0]
    other = tiny_random_model(hf_tokenizer, seed=4)
    engine.update_weights(other.state_dict())
    after = engine.generate([req])[0]
    assert after.prefill_tokens == 10  # the episode's slot held keys of the old weights: recomputed
    assert after.logprobs == pytest.approx(_reference(other, req.prompt_ids, after.token_ids), abs=1e-4)
    assert after.logprobs != before.logprobs
    engine.close()


def test_options_are_checked(hf_tokenizer, hf_tiny_model):
    with pytest.raises(ValueError, match="engine.decode must be one of plain, static"):
        HFEngineConfig(decode="fast")
    with pytest.raises(ValueError, match="engine.slot_tokens"):
        HFEngineConfig(slot_tokens=-1)
    engine = static(hf_tiny_model, hf_tokenizer, slot_tokens=32)
    with pytest.raises(ValueError, match="engine.slot_tokens"):
        engine.generate([GenerationRequest(list(range(100, 130)), SamplingParams(max_new_tokens=8))])
    assert len(engine.generate([GenerationRequest(list(range(100, 120)), SamplingParams(max_new_tokens=8))])[0].token_ids) <= 8
    engine.close()
