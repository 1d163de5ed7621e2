"""``bench/env_server.py`` keeps working: a real run on the toy counter env, and ``--record`` refreshing its section."""
from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from agentgym_core.testing import load_script

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "env_server.py"


def _bench():
    return load_script(SCRIPT, "agentgym_bench_env_server")


def test_runs_on_the_counter_env_when_no_env_plugin_is_loaded():
    env = dict(os.environ, AGENTGYM_LOAD_PLUGINS="")  # no plugins: the default falls back to the toy env
    proc = subprocess.run([sys.executable, str(SCRIPT), "--sessions", "1", "--servers", "1", "--seconds", "0.5"],
                          check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "| in-process |       - |        1 |" in out
    assert "| http       |       1 |        1 |" in out
    summary = [line for line in out.splitlines() if line.startswith("| agentgym_env_toys:CounterEnv | 1 |")]
    assert len(summary) == 1, out
    steps = [int(line.split("|")[4]) for line in out.splitlines() if line.startswith(("| in-process", "| http"))]
    assert len(steps) == 2 and all(s > 0 for s in steps), out


def _result(env: str, steps: int) -> dict:
    bench = _bench()
    row = {"mode": "in-process", "servers": "-", "sessions": 1, "steps": steps, "resets": 0, "secs": 1.0, "mib": 0.5,
           "step_ms": 1.0, "reset_ms": float("nan")}
    http = {**row, "mode": "http", "servers": 1}
    return {"env": env, "profile": bench.profile(env), "sessions": [1], "servers": [1], "reset": (2.0, 1.0),
            "rows": [row, http], "load": (0.5, 0.6), "at": datetime.now(timezone.utc)}


def test_record_refreshes_one_env_and_keeps_the_rest(tmp_path):
    bench = _bench()
    doc = tmp_path / "BENCHMARKS.md"
    doc.write_text("# Benchmarks\n\n## Start-up\n\nfast\n\n## Env serving\n\nHand-written intro.\n\n## GPU\n\nlater\n")
    bench.record([_result("babyai", 111), _result("textcraft", 222)], ["--x"], path=doc)
    bench.record([_result("babyai", 333)], ["--y"], path=doc)
    text = doc.read_text()
    assert text.startswith("# Benchmarks\n\n## Start-up\n\nfast\n\n## Env serving\n\nHand-written intro.\n")
    assert text.rstrip().endswith("## GPU\n\nlater")
    summary = text[text.index(bench.SUMMARY):text.index("### babyai,")]
    assert [line.split("|")[1].strip() for line in summary.splitlines() if line.startswith("| ") and "env |" not in line] \
        == ["babyai", "textcraft"]
    assert "| 333 |" in summary and "| 111 |" not in summary and "| 222 |" in summary  # babyai refreshed, textcraft kept
    assert text.count("### babyai,") == 1 and text.count("### textcraft,") == 1
    assert "`python bench/env_server.py --y`" in text and "`python bench/env_server.py --x`" in text
