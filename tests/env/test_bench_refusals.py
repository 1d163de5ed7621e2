"""A refusal is judged like an answer (issue 36): bench/service_loopholes.py's agents that guess which request to
refuse win nothing over HTTP on a sample of every service env's test and OOD tasks, while the expert wins them all.

- ``refuse_k1``..``refuse_k3``: the plain worker refusing the k-th request once it has read it, with a reason that
  names no rule ("our policy does not allow it"); before refusals had to give the reason, ``refuse_k1`` won 11.5% of
  ecommerce test (12.0% OOD), 6.6% of office test and 5.6% of projects test;
- ``refuse_with_all_reasons``: ``refuse_k1`` listing every rule of the policy (a list, not a reason);
- ``refuse_named`` (projects): every request that names a person refused, with the likeliest reasons (no skill, on
  leave); a named person is now allowed about as often as ruled out;
- ``refuse_k1_guess``: ``refuse_k1`` naming the two likeliest rules; it won 7.7% of ecommerce test (4.5% OOD), 3.0%
  of office test and 3.9% of projects test (2.5% OOD) while a task's only hinge could be the forbidden request it
  guessed; now every such task also has an allowed request whose write the policy decides.

The whole run is ``python bench/service_loopholes.py``."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUESSERS = ("refuse_k1", "refuse_k2", "refuse_k3", "refuse_with_all_reasons", "refuse_named", "refuse_k1_guess")


@pytest.mark.slow
def test_refusing_a_guessed_request_wins_nothing_over_http(tmp_path):
    out = tmp_path / "rows.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "service_loopholes.py"), "--limit", "40", "--agents",
         ",".join(GUESSERS + ("expert",)), "--json", str(out)],
        capture_output=True, text=True, timeout=900, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = json.loads(out.read_text())
    assert {(r["env"], r["agent"]) for r in rows if r["agent"] == "refuse_named"} == {("projects", "refuse_named")}
    for r in rows:
        assert r["errors"] == 0 and r["exposed"] == 0, r
        if r["agent"] == "expert":
            assert r["success"] == 1.0, r
        else:
            assert r["success"] == 0.0 and r["graded"] <= 0.05, (r["env"], r["split"], r["agent"], r["success"],
                                                                 r["graded"])
