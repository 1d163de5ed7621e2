"""Are two run directories the same run? Every step's trajectories, metrics.jsonl (minus timing fields) and
eval/*.json (minus the model path) compared exactly; prints one line per file and exits 1 on any difference.

    python bench/same_run.py /tmp/before/runs/qs-before runs/qs-after

Used to check that a refactor leaves the default quickstart bit for bit as it was (docs/BENCHMARKS.md).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

#: Wall-clock figures: they differ between any two runs.
TIMING = {"tokens_per_s", "gen_tokens_per_s", "train_tokens_per_s", "step_time_s", "rollout_time_s",
          "update_time_s", "weight_sync_time_s", "wall_s", "seconds"}


def _lines(path: Path) -> list:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _strip(value, drop: set[str]):
    if isinstance(value, dict):
        return {k: _strip(v, drop) for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [_strip(v, drop) for v in value]
    return value


def compare(a: Path, b: Path) -> list[tuple[str, bool, str]]:
    """``(file, same, note)`` for every file the comparison covers."""
    out = []
    files = sorted({p.relative_to(a) for p in (a / "trajectories").glob("*.jsonl")}
                   | {p.relative_to(b) for p in (b / "trajectories").glob("*.jsonl")})
    files += ["metrics.jsonl"]
    files += sorted({p.relative_to(a) for p in (a / "eval").glob("*")} | {p.relative_to(b) for p in (b / "eval").glob("*")})
    for rel in files:
        pa, pb = a / rel, b / rel
        if not (pa.is_file() and pb.is_file()):
            out.append((str(rel), False, "missing in " + (str(a) if not pa.is_file() else str(b))))
            continue
        drop = TIMING | ({"model"} if str(rel).endswith(".json") else set())
        if str(rel).endswith(".jsonl"):
            da, db = _strip(_lines(pa), drop), _strip(_lines(pb), drop)
        else:
            da, db = _strip(json.loads(pa.read_text()), drop), _strip(json.loads(pb.read_text()), drop)
        note = ""
        if da != db and isinstance(da, list) and isinstance(db, list):
            first = next((i for i, (x, y) in enumerate(zip(da, db)) if x != y), min(len(da), len(db)))
            note = f"first difference in line {first + 1}"
        out.append((str(rel), da == db, note))
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    rows = compare(Path(argv[0]), Path(argv[1]))
    for rel, same, note in rows:
        print(f"{'same' if same else 'DIFFERENT':9} {rel} {note}")
    different = [r for r in rows if not r[1]]
    print(f"{len(rows) - len(different)} of {len(rows)} files the same")
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
