"""``bench/startup.py --record`` puts its table under "## Start-up" and leaves the rest of BENCHMARKS.md alone."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from agentgym_core.testing import load_script

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "startup.py"

DOC = """# Benchmarks

Intro.

## Start-up

Goal: fast.

### Start-up, 2026-01-01

| command | median ms | best ms |
|---|---:|---:|
| `agentgym --help` | 999 | 999 |

### Notes kept by hand

Keep me.

## Viewer

| a | b |
|---|---|
| viewer row | 1 |

## Training

Training text.
"""


def _record():
    return load_script(SCRIPT, "agentgym_bench_startup").record


def test_record_replaces_the_old_table_inside_its_section():
    block = "### Start-up, 2026-11-29 23:00 UTC\n\n| command | median ms | best ms |\n|---|---:|---:|\n| `agentgym --help` | 100 | 90 |\n"
    out = _record()(DOC, block)
    assert "999" not in out and out.count("### Start-up, ") == 1
    assert out.index("## Start-up") < out.index("Goal: fast.") < out.index("Keep me.") < out.index("| 100 | 90 |") < out.index("## Viewer")
    # everything outside the section is byte-for-byte the same
    assert out[out.index("## Viewer"):] == DOC[DOC.index("## Viewer"):]
    assert out[:out.index("## Start-up")] == DOC[:DOC.index("## Start-up")]
    assert _record()(out, block) == out  # recording the same block again changes nothing


def test_record_adds_a_missing_section_at_the_end_and_handles_a_last_section():
    block = "### Start-up, today\n\n| t |\n"
    added = _record()("# Benchmarks\n\n## Viewer\n\nv\n", block)
    assert added == "# Benchmarks\n\n## Viewer\n\nv\n\n## Start-up\n\n### Start-up, today\n\n| t |\n"
    last = _record()("# B\n\n## Start-up\n\nGoal.\n\n### Start-up, old\n\n| old |\n", block)
    assert last == "# B\n\n## Start-up\n\nGoal.\n\n### Start-up, today\n\n| t |\n"


def test_record_on_a_copy_through_the_command_line(tmp_path):
    doc = tmp_path / "BENCHMARKS.md"
    doc.write_text(DOC)
    proc = subprocess.run([sys.executable, str(SCRIPT), "--runs", "1", "--record", "--out", str(doc)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    out = doc.read_text()
    section = out[out.index("## Start-up"):out.index("## Viewer")]
    assert "999" not in section and "| `agentgym --help` |" in section and "load average" in section and "Keep me." in section
    assert out[out.index("## Viewer"):] == DOC[DOC.index("## Viewer"):]
