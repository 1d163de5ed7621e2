"""Load: 256 concurrent sessions on one real env server for a bounded time (the long run is bench/load.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from agentgym_core.testing import load_script

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="RSS via /proc (Linux)")]

#: Server RSS may grow at most this much from the end of warm-up to the end of the run.
RSS_BOUND_MIB = 32.0


def _bench():
    return load_script(Path(__file__).resolve().parents[2] / "bench" / "load.py", "agentgym_bench_load")


def test_256_sessions_no_errors_no_leak():
    result = _bench().run(sessions=256, seconds=12, warmup=4)
    print(result)
    assert result["errors"] == 0, result["first_errors"]
    assert result["episodes"] >= 256  # every session finished at least one episode
    assert result["open_after_close"] == 0
    assert result["rss_max_mib"] - result["rss_warm_mib"] <= RSS_BOUND_MIB, result
    assert result["rss_end_mib"] - result["rss_warm_mib"] <= RSS_BOUND_MIB, result
