"""The verdict cache: a judge is never asked the same thing twice, across reruns and resumes.

Keyed by (judge model, rubric hash, content hash). In memory, and, when there is a file, one JSON
line per verdict appended as it comes: ``<run dir>/judge/cache.jsonl`` of the run directory given,
or else of the training run this process is in. A new process, a resumed run or a second reward
object on the same file reads them back. A torn last line (a crash while
writing) is skipped.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, Optional

#: Where the cache lives inside a run directory.
RUN_DIR_FILE = Path("judge") / "cache.jsonl"
#: The run directory of the training run this process is in (set by the ``on_run_start`` hook).
current_run_dir: Optional[str] = None
#: That run's model (``model.path``): whose tokenizer decodes an episode's prompt when ``tokenizer`` is unset.
current_model: Optional[str] = None


def cache_file(run_dir: Optional[str], path: Optional[str]) -> Optional[Path]:
    """The cache file: *path* if given, else that of *run_dir*, else that of the run this process is in
    (None: none of them; the cache lives in memory only)."""
    if path:
        return Path(path)
    run_dir = run_dir or current_run_dir
    if run_dir:
        from agentgym_core.rundir import RunDir

        return RunDir(run_dir).path / RUN_DIR_FILE
    return None


def cache_key(model: str, rubric: str, content: str) -> str:
    return f"{model}|{rubric}|{content}"


class VerdictCache:
    """Verdicts by key; see the module docstring."""

    def __init__(self, path: Optional[Path] = None, known: Optional[dict[str, dict[str, Any]]] = None) -> None:
        self.path = Path(path) if path is not None else None
        #: *known*: entries kept from a cache in memory before this one (not written again).
        self.entries: dict[str, dict[str, Any]] = dict(known or {})
        self.lock = threading.Lock()
        if self.path is not None and self.path.is_file():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(entry, dict) and "key" in entry:
                    self.entries[entry["key"]] = entry

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, key: str) -> Optional[dict[str, Any]]:
        return self.entries.get(key)

    def put(self, key: str, entry: dict[str, Any]) -> None:
        """Remember *entry* under *key* and append it to the file."""
        entry = {"key": key, **entry}
        with self.lock:
            self.entries[key] = entry
            if self.path is None:
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry, ensure_ascii=False) + "\n")
                f.flush()
                os.fsync(f.fileno())
