"""token_logprobs: the LM head on chosen positions, in chunks, gives the full-logits results and gradients; the
logit scales and softcaps of other model families are applied as their own forward applies them."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from agentgym_hf import logprobs  # noqa: E402
from agentgym_hf.logprobs import lm_logits, token_logprobs  # noqa: E402

SMALL = dict(vocab_size=96, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
             num_key_value_heads=2, max_position_embeddings=64)


def family(name: str):
    torch.manual_seed(0)
    if name == "llama-tied":
        return transformers.LlamaForCausalLM(transformers.LlamaConfig(**SMALL, tie_word_embeddings=True))
    if name == "gemma2-softcap":
        cfg = transformers.Gemma2Config(**SMALL, head_dim=8, final_logit_softcapping=0.5, attn_implementation="eager")
        return transformers.Gemma2ForCausalLM(cfg)
    if name == "cohere-scale":
        return transformers.CohereForCausalLM(transformers.CohereConfig(**SMALL, logit_scale=0.25))
    if name == "granite-scaling":
        return transformers.GraniteForCausalLM(transformers.GraniteConfig(**SMALL, logits_scaling=3.0))
    raise KeyError(name)


@pytest.mark.parametrize("name", ["llama-tied", "gemma2-softcap", "cohere-scale", "granite-scaling"])
def test_lm_logits_are_the_models_own(name):
    torch.set_num_threads(1)
    lm = family(name).eval()
    ids = torch.randint(0, SMALL["vocab_size"], (2, 12), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = lm(input_ids=ids).logits.float()
        hidden = lm.get_decoder()(input_ids=ids).last_hidden_state
        got = lm_logits(lm, hidden)
    assert torch.allclose(got, expected, atol=1e-5)


def _full_reference(lm, hidden, targets):
    """What the trainers computed before: the whole [N, vocab] log-softmax at once."""
    logp_all = torch.log_softmax(lm.get_output_embeddings()(hidden).float(), dim=-1)
    return (logp_all.gather(-1, targets[:, None]).squeeze(-1), -(logp_all.exp() * logp_all).sum(-1),
            logp_all.argmax(-1) == targets)


@pytest.mark.parametrize("lora", [False, True])
def test_chunks_give_the_one_pass_logprobs_entropy_and_gradients(lora):
    """A 5-position chunk over 37 positions (a last, shorter chunk) against the full log-softmax, LoRA adapters on
    the (tied) LM head included: values and the gradients of the weights and hidden states to 1e-5."""
    torch.set_num_threads(1)
    lm = family("llama-tied")
    if lora:
        from peft import LoraConfig, get_peft_model

        lm = get_peft_model(lm, LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "lm_head"],
                                           init_lora_weights=False)).get_base_model()
    g = torch.Generator().manual_seed(2)
    hidden0 = torch.randn(37, SMALL["hidden_size"], generator=g)
    targets = torch.randint(0, SMALL["vocab_size"], (37,), generator=g)
    weights = torch.rand(37, generator=g)
    results = []
    for run in ("full", "one pass", "chunked"):
        lm.zero_grad()
        hidden = hidden0.clone().requires_grad_(True)
        if run == "full":
            lp, ent, hit = _full_reference(lm, hidden, targets)
        else:
            lp, ent, hit = token_logprobs(lm, hidden, targets, entropy=True, hits=True,
                                          chunk=5 if run == "chunked" else None)
        ((lp * weights).sum() + (ent * weights.flip(0)).sum()).backward()
        grads = [p.grad.clone() for p in lm.parameters() if p.grad is not None]
        results.append((lp.detach(), ent.detach(), hit, hidden.grad, grads))
    full = results[0]
    for other in results[1:]:
        assert torch.allclose(other[0], full[0], atol=1e-5) and torch.allclose(other[1], full[1], atol=1e-5)
        assert torch.equal(other[2], full[2])
        assert torch.allclose(other[3], full[3], atol=1e-5)
        assert len(other[4]) == len(full[4]) > 0
        assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(other[4], full[4]))


def test_no_pass_allocates_logits_for_every_position(monkeypatch):
    """Forward and backward: no op allocates an [N, vocab] tensor once N is cut into chunks (the profiler's
    per-op memory); the one-pass path does, which shows what the probe sees."""
    torch.set_num_threads(1)
    vocab, n = 512, 64
    torch.manual_seed(0)
    lm = transformers.LlamaForCausalLM(transformers.LlamaConfig(**{**SMALL, "vocab_size": vocab}))
    hidden = torch.randn(n, SMALL["hidden_size"], requires_grad=True)
    targets = torch.randint(0, vocab, (n,))

    def largest_allocation(chunk: int) -> int:
        monkeypatch.setattr(logprobs, "CHUNK", chunk)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
            scores = token_logprobs(lm, hidden, targets, entropy=True)
            (scores.logprobs.sum() + scores.entropy.sum()).backward()
        return max(e.self_cpu_memory_usage for e in prof.events())

    full = n * vocab * 4  # bytes of fp32 logits for every position
    assert largest_allocation(n) >= full
    assert largest_allocation(8) <= full // 4


def test_no_positions():
    lm = family("llama-tied")
    scores = token_logprobs(lm, torch.zeros(0, SMALL["hidden_size"]), torch.zeros(0, dtype=torch.long), entropy=True)
    assert scores.logprobs.shape == scores.entropy.shape == (0,) and scores.hits is None
