"""Graph capture per bucket and the fall back to the plain path.

Capturing needs a GPU; on a CPU a stand-in backend "captures" by keeping the step itself (or a
broken copy of it), so what the engine does around capture is tested everywhere: one capture
per (batch, length, mode) bucket, warm-up that changes nothing, a first replay checked against
the eager step, and one warning plus the plain path's exact results when anything fails.
"""
from __future__ import annotations

import logging

import pytest
import torch
from agentgym_engine_hf.engine import HFEngine
from agentgym_engine_hf.graphs import batch_bucket, length_bucket

from agentgym_core.engine import GenerationRequest, SamplingParams


class StandIn:
    """Captures by keeping the function; *broken* makes a capture raise or a replay go wrong."""

    def __init__(self, broken: str = "") -> None:
        self.broken, self.warmed, self.captured = broken, 0, 0

    def warm(self, fn):
        self.warmed += 1
        fn()

    def capture(self, fn):
        self.captured += 1
        if self.broken == "capture":
            raise RuntimeError("operation not permitted when stream is capturing")
        if self.broken == "replay":
            return lambda: (fn(), fn())  # two steps for one: the check must notice
        return fn


def _requests(n=4):
    return [GenerationRequest(list(range(100 + 7 * i, 120 + 9 * i)), SamplingParams(max_new_tokens=6 + i, seed=i,
                              temperature=0.0 if i % 2 else 1.0, top_p=0.9))
            for i in range(n)]


def _engine(model, tokenizer, backend):
    engine = HFEngine(model, tokenizer, decode="static", sync_every=3)
    engine.static.backend_factory = lambda: backend
    return engine


def test_buckets():
    assert [batch_bucket(n, 32) for n in (1, 3, 5, 9, 17, 32)] == [1, 4, 8, 16, 32, 32]
    assert batch_bucket(100, 100) == 100 and batch_bucket(70, 512) == 96
    assert [length_bucket(n, 4097, True) for n in (1, 128, 129, 1000, 5000)] == [128, 128, 256, 1024, 4097]
    assert [length_bucket(n, 4097, False) for n in (1, 33, 64)] == [32, 64, 64]


def test_a_captured_step_gives_the_eager_steps_tokens(hf_tokenizer, hf_tiny_model):
    backend = StandIn()
    graphed = _engine(hf_tiny_model, hf_tokenizer, backend)
    eager = HFEngine(hf_tiny_model, hf_tokenizer, decode="static", sync_every=3)
    for n in (4, 4, 2):  # the second call replays the first's graph; the third needs a smaller batch
        got, want = graphed.generate(_requests(n)), eager.generate(_requests(n))
        assert [r.token_ids for r in got] == [r.token_ids for r in want]
        assert [r.logprobs for r in got] == [r.logprobs for r in want]
    graphs = graphed.static.graphs
    # one capture per (batch, length, mode) bucket met: rows that finish early change the batch or the mode
    assert graphed.static.broken is None and backend.captured == backend.warmed == graphs.captures == len(graphs.graphs)
    assert {(4, "nucleus"), (2, "nucleus")} <= {(key[0], key[2]) for key in graphs.graphs}
    graphed.close()
    eager.close()


@pytest.mark.parametrize("broken", ["capture", "replay"])
def test_a_failed_capture_falls_back_to_the_plain_path_once(broken, hf_tokenizer, hf_tiny_model, caplog):
    engine = _engine(hf_tiny_model, hf_tokenizer, StandIn(broken))
    plain = HFEngine(hf_tiny_model, hf_tokenizer)
    with caplog.at_level(logging.WARNING, logger="agentgym.engine.hf"):
        for _ in range(2):  # requests in flight at the failure start over; later calls go plain
            got, want = engine.generate(_requests()), plain.generate(_requests())
            assert [(r.token_ids, r.logprobs) for r in got] == [(r.token_ids, r.logprobs) for r in want]
    warnings = [r.getMessage() for r in caplog.records if "engine.decode=static" in r.getMessage()]
    assert len(warnings) == 1 and "plain decode path" in warnings[0]
    assert ("capturing the decode step" if broken == "capture" else "the captured decode step") in engine.static.broken
    engine.close()


def test_a_model_the_slots_cannot_serve_falls_back(hf_tokenizer, caplog):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=len(hf_tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, use_sliding_window=True, sliding_window=16,
                         max_window_layers=0, pad_token_id=hf_tokenizer.pad_token_id)
    model = Qwen2ForCausalLM(config).eval()
    engine = HFEngine(model, hf_tokenizer, decode="static")
    req = GenerationRequest(list(range(100, 110)), SamplingParams(max_new_tokens=4, temperature=0.0))
    with caplog.at_level(logging.WARNING, logger="agentgym.engine.hf"):
        got = engine.generate([req])[0]
    assert got.token_ids == HFEngine(model, hf_tokenizer).generate([req])[0].token_ids
    assert "sliding" in engine.static.broken
    assert sum("engine.decode=static" in r.getMessage() for r in caplog.records) == 1
    engine.close()


def test_an_idle_gpu_engine_waits_for_requests_arriving_one_by_one(hf_tokenizer, hf_tiny_model):
    """``_gather`` (run on a GPU only): wait while the queue grows, stop when it holds a slot's worth."""
    import threading
    import time

    engine = HFEngine(hf_tiny_model, hf_tokenizer, decode="static", max_batch_size=4)
    static = engine.static
    start = time.monotonic()
    static._gather(most=1.0)  # nothing arriving: back after one look
    assert time.monotonic() - start < 0.5

    def trickle():
        for _ in range(3):
            time.sleep(0.001)
            with static._cv:
                static._queue.append(object())

    feeder = threading.Thread(target=trickle)
    feeder.start()
    static._gather(most=1.0)
    feeder.join()
    assert len(static._queue) >= 1
    static._queue.extend(object() for _ in range(4))
    start = time.monotonic()
    static._gather(most=1.0)  # a full batch is waiting: no need to wait longer
    assert time.monotonic() - start < 0.1
    static._queue.clear()


@pytest.mark.gpu
def test_cuda_graphs_on_a_gpu(hf_tokenizer):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    from agentgym_hf.loading import tiny_random_model

    model = tiny_random_model(hf_tokenizer, seed=1).to("cuda")
    graphed = HFEngine(model, hf_tokenizer, decode="static")
    eager = HFEngine(model, hf_tokenizer, decode="static", cuda_graphs=False)
    plain = HFEngine(model, hf_tokenizer)
    got, want, base = (e.generate(_requests(8)) for e in (graphed, eager, plain))
    assert graphed.static.broken is None and graphed.static.graphs.captures > 0
    assert [r.token_ids for r in got] == [r.token_ids for r in want]
    greedy = [i for i in range(8) if i % 2]
    assert [got[i].token_ids for i in greedy] == [base[i].token_ids for i in greedy]
    graphed.close()
    eager.close()
