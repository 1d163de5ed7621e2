"""A cached index of the CLI's commands, so ``agentgym --help`` (and starting a command) need not
import every plugin.

Listing the commands means loading every ``agentgym`` entry point (each plugin's ``plugin.py``)
and running their ``register_commands`` hooks: ~0.1 s, most of ``agentgym --help``. The result
(name, import string, description per command) is kept in ``$AGENTGYM_CACHE/cli/`` (default
``~/.cache/agentgym/cli/``), one file per Python interpreter, valid while nothing it was built
from changed:

* the key: core's version, the interpreter, ``AGENTGYM_LOAD_PLUGINS`` / ``AGENTGYM_DISABLE_PLUGINS``,
  and the modification time of every ``sys.path`` folder (installing, upgrading or removing a
  distribution adds or removes its ``*.dist-info`` there);
* the files: the modification time of every loaded plugin module (an editable plugin's edited
  ``plugin.py`` counts).

A run where a plugin fails to load writes no index (its warning keeps showing); an index that
cannot be read or written is ignored (``AGENTGYM_NO_CLI_CACHE=1`` turns it off).
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

#: What one command is in the index: (name, import string, one line of help).
Command = tuple[str, str, str]


def index_file() -> Path:
    root = os.environ.get("AGENTGYM_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "agentgym")
    which = hashlib.sha1(sys.executable.encode()).hexdigest()[:12]
    return Path(root) / "cli" / f"commands-{which}.json"


def _key() -> str:
    from agentgym_core import __version__

    parts = [__version__, sys.executable, repr(os.environ.get("AGENTGYM_LOAD_PLUGINS")),
             repr(os.environ.get("AGENTGYM_DISABLE_PLUGINS"))]
    for entry in sys.path:
        try:
            parts.append(f"{entry}:{os.stat(entry or '.').st_mtime_ns}")
        except OSError:
            parts.append(f"{entry}:-")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def load() -> list[Command] | None:
    """The cached commands, or None when there is no valid index."""
    if os.environ.get("AGENTGYM_NO_CLI_CACHE"):
        return None
    try:
        data = json.loads(index_file().read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("key") != _key():
        return None
    if any(_mtime(path) != mtime for path, mtime in data.get("files", {}).items()):
        return None
    return [tuple(c) for c in data.get("commands", [])]  # type: ignore[misc]


def store(manager: Any) -> list[Command]:
    """The commands of *manager* (whose plugins all loaded), written to the index; returns them."""
    commands = [(e.name, e.target, e.description) for e in manager.registry("commands").in_order()]
    if os.environ.get("AGENTGYM_NO_CLI_CACHE"):
        return commands
    files = {}
    for info in manager.plugins.values():
        module = sys.modules.get(info.module)
        path = getattr(module, "__file__", None)
        if path:
            files[path] = _mtime(path)
    target = index_file()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}")
        tmp.write_text(json.dumps({"key": _key(), "files": files, "commands": commands}))
        os.replace(tmp, target)
    except OSError:  # a read-only home: no index, the commands are still right
        pass
    return commands
