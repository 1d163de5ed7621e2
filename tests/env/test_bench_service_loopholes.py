"""bench/service_loopholes.py keeps running: every agent on two tasks of each split of one env, over HTTP."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_loophole_bench_runs_on_two_tasks(tmp_path):
    out = tmp_path / "rows.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "service_loopholes.py"), "--envs", "projects", "--limit", "2",
         "--show", "1", "--json", str(out)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "| env | split | agent |" in proc.stdout
    assert "--- projects / parrot / task" in proc.stdout  # --show prints an episode
    rows = json.loads(out.read_text())
    agents = {"parrot", "refuse_first", "spread", "glue", "impostor", "vague_preauth", "refuse_k1", "refuse_k2",
              "refuse_k3", "refuse_with_all_reasons", "refuse_named", "refuse_k1_guess", "plain", "expert"}
    assert {(r["split"], r["agent"]) for r in rows} == {(s, a) for s in ("test", "ood") for a in agents}
    for r in rows:
        assert r["tasks"] == 2 and r["errors"] == 0, r
        assert 0.0 <= r["success"] <= 1.0 and r["actions"] > 0
    expert = [r for r in rows if r["agent"] == "expert"]
    assert all(r["success"] == 1.0 and r["exposed"] == 0 for r in expert)
