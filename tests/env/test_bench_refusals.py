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
  guessed; then every such task also had an allowed request whose write the policy decides. In ecommerce that write
  (a refund left to the store) went to the gift card 85% of the time, and the gift-card habit won 42.7% of test blind
  (17-28% guessing, plugins/envs/ecommerce/tests/test_ecommerce_hinges.py); now either way is as likely, every task
  has a forbidden request and the rules are drawn evenly, so a guess had to hit the request, its rule (2 of 7) and the
  refund's way (1 of 2): about 1/3 x 2/7 x 1/2 = 5%, and ``refuse_k1_guess`` won 4.9% of ecommerce test. Since
  2026-12-07 every ecommerce task's value hinge is an exchange whose new option is left to the store too (the one in
  stock closest in price, among 4-15): over HTTP 0.7% of test and 0% of OOD, with either habit
  (``refuse_k1_guess_gift``: a difference left to the store to the gift card).

The whole run is ``python bench/service_loopholes.py``."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUESSERS = ("refuse_k1", "refuse_k2", "refuse_k3", "refuse_with_all_reasons", "refuse_named", "refuse_k1_guess",
            "refuse_k1_guess_gift")


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
    assert {r["env"] for r in rows if r["agent"] == "refuse_k1_guess_gift"} == {"ecommerce"}
    for r in rows:
        assert r["errors"] == 0 and r["exposed"] == 0, r
        if r["agent"] == "expert":
            assert r["success"] == 1.0, r
        elif r["agent"] in ("refuse_k1_guess", "refuse_k1_guess_gift") and r["env"] == "ecommerce":
            assert r["success"] <= 0.025 and r["graded"] <= 0.06, (r["split"], r["success"], r["graded"])
        else:
            assert r["success"] == 0.0 and r["graded"] <= 0.05, (r["env"], r["split"], r["agent"], r["success"],
                                                                 r["graded"])
