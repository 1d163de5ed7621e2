"""The sft loss with the LM head in chunks: the full-logits cross-entropy, accuracy and gradients."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from agentgym_hf import logprobs  # noqa: E402
from agentgym_trainer_sft.data import Batch  # noqa: E402
from agentgym_trainer_sft.loss import reply_loss  # noqa: E402


def test_reply_loss_in_chunks_is_the_full_cross_entropy(monkeypatch):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    lm = transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=80, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=2, max_position_embeddings=64, tie_word_embeddings=True))
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 80, (2, 30), generator=g)
    mask = (torch.rand(2, 30, generator=g) > 0.3).float()
    mask[:, 0] = 0
    batch = Batch(ids, torch.ones_like(ids), torch.arange(30).expand(2, -1), mask)
    lm.zero_grad()
    logits = lm(input_ids=ids).logits[:, :-1].float()
    sel = mask[:, 1:] > 0
    expected = torch.nn.functional.cross_entropy(logits[sel], ids[:, 1:][sel], reduction="sum")
    expected.backward()
    want = [p.grad.clone() for p in lm.parameters()]
    want_right = int((logits[sel].argmax(-1) == ids[:, 1:][sel]).sum())
    monkeypatch.setattr(logprobs, "CHUNK", 7)
    lm.zero_grad()
    nll, right = reply_loss(lm, batch, "cpu")
    nll.backward()
    assert float(nll) == pytest.approx(float(expected), rel=1e-6)
    assert int(right) == want_right
    assert all(torch.allclose(p.grad, w, atol=1e-5) for p, w in zip(lm.parameters(), want))
