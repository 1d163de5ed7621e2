"""Make the toy envs importable here and in server subprocesses (``agentgym_env_toys:CounterEnv``)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
_paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
if HERE not in _paths:
    os.environ["PYTHONPATH"] = os.pathsep.join([HERE, *[p for p in _paths if p]])
