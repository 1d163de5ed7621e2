"""Fault injection on the rollout path, with real server processes on loopback and a tiny real model:
an env server SIGKILLed mid-rollout, an env server that stalls, and an engine that fails mid-rollout."""
from __future__ import annotations

import asyncio
import os
import signal
import threading
import time

import httpx
import pytest

pytest.importorskip("agentgym_engine_hf", reason="needs the hf engine plugin (pip install -e plugins/engines/hf)")

from agentgym_core.assembly import AgentSettings, RunParts  # noqa: E402
from agentgym_core.env.client import HTTPEnvPool  # noqa: E402
from agentgym_core.env.spec import EnvSpec  # noqa: E402
from agentgym_core.env.launcher import EnvLauncher  # noqa: E402
from agentgym_core.rollout.runner import rollout  # noqa: E402
from agentgym_engine_hf.engine import HFEngine  # noqa: E402

pytestmark = pytest.mark.slow
ECHO = "agentgym_robust_envs:EchoEnv"


@pytest.fixture(scope="module")
def engine():
    import torch

    from agentgym_hf.loading import load_tokenizer, tiny_random_model

    torch.set_num_threads(1)
    tok = load_tokenizer("smollm2-135m-instruct")
    return HFEngine(tiny_random_model(tok, seed=0), tok, max_batch_size=8)


def _rollout(engine, pool, n, max_turns, **kw):
    spec = EnvSpec(name="echo", instruction="Say anything.", action_format="free", splits={"train": range(n)})
    parts = RunParts(pool=pool, env=spec, agent=AgentSettings(max_new_tokens=6, concurrency=n), engine=engine,
                     owns_engine=False)
    return asyncio.run(rollout(parts, [(i, i) for i in range(n)], max_turns=max_turns, seed=0, **kw))


@pytest.mark.timeout(120)
def test_env_server_sigkilled_mid_rollout(engine):
    """Episodes on the killed server fail with a reason naming it; the others finish; nothing hangs."""
    with EnvLauncher(ECHO, servers=2, options={"length": 10**6}, ttl=0) as launcher:
        victim = launcher.procs[0]
        killed = threading.Event()

        def kill_when_busy() -> None:  # once server 0 holds sessions and has had time to step them
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    if httpx.get(f"{launcher.urls[0]}/health", timeout=2).json()["sessions"] > 0:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.05)
            time.sleep(0.5)
            os.kill(victim.pid, signal.SIGKILL)
            killed.set()

        threading.Thread(target=kill_when_busy, daemon=True).start()
        pool = HTTPEnvPool(launcher.urls, timeout=5, unavailable_after=2)
        start = time.monotonic()
        trajs = _rollout(engine, pool, 8, max_turns=60)
        elapsed = time.monotonic() - start
        asyncio.run(pool.aclose())
        assert killed.is_set() and victim.poll() == -signal.SIGKILL
        failed = [t for t in trajs if t.failed]
        ok = [t for t in trajs if not t.failed]
        print(f"rollout {elapsed:.1f}s: {len(failed)} failed, {len(ok)} finished; e.g. {failed[0].error if failed else ''}")
        assert failed and ok, [t.end_reason for t in trajs]
        assert len(failed) <= 4  # sessions are spread evenly: only server 0's episodes fail
        for t in failed:
            assert t.end_reason == "env_error"
            assert launcher.urls[0] in t.error and "EnvUnavailable" in t.error, t.error
        assert all(t.end_reason == "max_turns" and t.num_turns == 60 for t in ok)
        assert launcher.alive() == [False, True]
        assert httpx.get(f"{launcher.urls[1]}/health", timeout=5).json()["sessions"] == 0  # survivors closed theirs
    try:
        from agentgym_trainer_rl.batch import build_batch
    except ImportError:
        return
    batch = build_batch(trajs)  # what the trainer does next: failed episodes carry zero weight
    for i, t in enumerate(trajs):
        assert (batch.loss_mask[i].sum() == 0) == t.failed


@pytest.mark.timeout(120)
def test_stalled_env_server_times_out_at_bound(engine):
    """A step that never returns fails its episode after about timeout + unavailable_after, not never."""
    timeout, unavailable_after = 2.0, 1.0
    with EnvLauncher("agentgym_robust_envs:StallEnv", options={"stall": 3600}, ttl=0) as launcher:
        pool = HTTPEnvPool(launcher.urls, timeout=timeout, unavailable_after=unavailable_after)
        start = time.monotonic()
        trajs = _rollout(engine, pool, 2, max_turns=3)
        elapsed = time.monotonic() - start
        asyncio.run(pool.aclose())
    print(f"stalled steps failed after {elapsed:.1f}s (timeout {timeout}s, unavailable_after {unavailable_after}s): "
          f"{trajs[0].error}")
    for t in trajs:
        assert t.failed and t.end_reason == "env_error"
        assert "step 1" in t.error and "Timeout" in t.error, t.error
    assert elapsed >= timeout  # it waited for the configured bound ...
    assert elapsed < 10 * (timeout + unavailable_after) + 30  # ... and then gave up (generous: shared CI cores)


class FailingEngine(HFEngine):
    """The real HF engine that raises on its Nth generate call (a CUDA error, an OOM, a dead vLLM)."""

    fail_on = 3

    def generate(self, requests):
        self.calls = getattr(self, "calls", 0) + 1
        if self.calls >= self.fail_on:
            raise RuntimeError("injected engine failure: CUDA error: an illegal memory access was encountered")
        return super().generate(requests)


@pytest.mark.timeout(120)
def test_engine_error_mid_rollout_fails_clearly(engine):
    """The engine's exception reaches the caller unchanged and every env session is closed."""
    failing = FailingEngine(engine.model, engine.tokenizer, max_batch_size=8)
    with EnvLauncher(ECHO, options={"length": 10**6}, ttl=0) as launcher:
        pool = HTTPEnvPool(launcher.urls, timeout=5, unavailable_after=2)
        with pytest.raises(RuntimeError, match="injected engine failure"):
            _rollout(failing, pool, 4, max_turns=10)
        asyncio.run(pool.aclose())
        assert launcher.alive() == [True]
        assert httpx.get(f"{launcher.urls[0]}/health", timeout=5).json()["sessions"] == 0
