"""Phase marks: nothing while no profile is collected, seconds, calls and summed counts while one is."""
from __future__ import annotations

import threading
import time

import pytest

from agentgym_core import profiling
from agentgym_core.profiling import collecting, phase


def test_outside_a_profile_a_phase_records_nothing_anywhere():
    assert not profiling.profiling()
    with phase("prefill", tokens=5):
        pass
    with collecting() as profile:
        pass
    assert profile.phases == {}  # the mark before the block went nowhere


def test_a_profile_sums_seconds_calls_and_counts_per_phase_across_threads():
    def work(n: int) -> None:
        with phase("decode", tokens=n, head=1):
            time.sleep(0.02)

    with collecting() as profile:
        assert profiling.profiling()
        threads = [threading.Thread(target=work, args=(n,)) for n in (1, 2, 3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        with phase("update", tokens=10):
            with phase("backward", tokens=10):  # nested phases are each timed on their own
                time.sleep(0.01)
    assert not profiling.profiling()
    decode = profile.phases["decode"]
    assert decode.calls == 3 and decode.counts == {"tokens": 6.0, "head": 3.0}
    assert decode.seconds >= 0.06  # three sleeps, summed even though they overlapped
    assert profile.phases["update"].seconds >= profile.phases["backward"].seconds >= 0.01
    profile.reset()
    assert profile.phases == {}


def test_a_phase_that_raises_is_still_counted_and_the_sync_hook_runs_at_both_ends():
    calls = []
    with collecting(sync=lambda: calls.append(1)) as profile:
        with pytest.raises(ValueError):
            with phase("optimizer"):
                raise ValueError("boom")
    assert profile.phases["optimizer"].calls == 1 and len(calls) == 2


def test_profiles_do_not_nest():
    with collecting():
        with pytest.raises(RuntimeError, match="already being collected"):
            with collecting():
                pass
    with collecting():  # the first one ended: a new one may start
        pass
