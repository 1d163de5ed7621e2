"""projects hinges on its policy for the outsider's agents too: bench/service_loopholes.py's ``plain`` worker (does the
work, never asks whether the policy allows it) and the tricks built on it win no task of a sample, over HTTP, while
the expert wins them all. On the task mix before every task hinged on the policy, ``plain`` won 23.9% of test and
20.0% of OOD (docs/BENCHMARKS.md); the whole run is ``python bench/service_loopholes.py --envs projects``."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_policy_blind_workers_win_no_projects_task(tmp_path):
    out = tmp_path / "rows.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "service_loopholes.py"), "--envs", "projects", "--limit", "30",
         "--agents", "plain,spread,expert", "--json", str(out)],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = {(r["split"], r["agent"]): r for r in json.loads(out.read_text())}
    for split in ("test", "ood"):
        assert rows[(split, "expert")]["success"] == 1.0
        for agent in ("plain", "spread"):
            row = rows[(split, agent)]
            assert row["errors"] == 0 and row["exposed"] == 0, row
            assert row["success"] == 0.0 and row["graded"] <= 0.05, (split, agent, row["success"], row["graded"])
