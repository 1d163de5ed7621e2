"""``agentgym new plugin NAME --kind KIND``: write an installable plugin package.

The generated package works as is: ``pip install -e DIR`` and ``agentgym plugins`` lists
it; its component is a small but real example (an env that passes ``check_env``, a reward,
a scheduler, ...) and its tests run with pytest.
"""
from __future__ import annotations

import keyword
import re
from pathlib import Path
from string import Template

from .errors import AgentGymError

KIND_TO_REGISTRY = {
    "env": "envs",
    "reward": "rewards",
    "scheduler": "schedulers",
    "backend": "backends",
}
# Trainers and engines are larger than a template can honestly be: start from
# plugins/trainers/rl or plugins/engines/hf instead.

PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "$dist"
version = "0.1.0"
description = "AgentGym $kind plugin: $name"
readme = "README.md"
requires-python = ">=3.10"
dependencies = ["agentgym-core"]

[project.entry-points.agentgym]
$name = "$package.plugin"

[tool.setuptools]
packages = ["$package"]
"""

PLUGIN = '''\
"""Hooks only: registering costs nothing, the component is imported when used."""
from agentgym_core import hookimpl


@hookimpl
def register_$registry(registry):
    registry.add("$name", "$package.component:$cls", description="$kind $name")
'''

COMPONENTS = {
    "env": '''\
"""A guessing game: find the number between 1 and 20 from "higher"/"lower" hints."""
import random

from agentgym_core import BaseEnv


class $cls(BaseEnv):
    instruction = (
        "Guess the secret number between 1 and 20. After each guess you are told whether the "
        "secret is higher or lower.\\nReply as: Thought: <reasoning> Action: guess <number>"
    )
    action_format = "react"

    def splits(self):
        return {"train": range(0, 1000), "test": range(1000, 1100)}

    def reset(self, *, task_id=None, seed=None):
        self.secret = random.Random(task_id if task_id is not None else seed).randint(1, 20)
        return "I picked a number between 1 and 20."

    def step(self, action):
        parts = action.split()
        if len(parts) != 2 or parts[0] != "guess" or not parts[1].isdigit():
            return "Invalid action. Use: guess <number>", 0.0, False, {"invalid_action": True}
        guess = int(parts[1])
        if guess == self.secret:
            return "Correct!", 1.0, True, {"success": True}
        return ("Higher." if guess < self.secret else "Lower."), 0.0, False, {}
''',
    "reward": '''\
"""A small cost for every turn, so that shorter successful episodes score higher."""
from dataclasses import dataclass

from agentgym_core.components import Reward


class $cls(Reward):
    @dataclass
    class Config:
        cost: float = 0.01

    def __init__(self, cost: float = 0.01):
        self.cost = cost

    def __call__(self, trajectory):
        return [-self.cost] * len(trajectory.turns)
''',
    "scheduler": '''\
"""Doubles the horizon every `every` steps, from `start` up to `limit` turns."""
from dataclasses import dataclass

from agentgym_core.components import Scheduler


class $cls(Scheduler):
    @dataclass
    class Config:
        start: int = 2
        every: int = 50
        limit: int = 16

    def __init__(self, start: int = 2, every: int = 50, limit: int = 16):
        self.start, self.every, self.limit = start, every, limit

    def max_turns(self, step):
        return min(self.limit, self.start * 2 ** (step // self.every))
''',
    "backend": '''\
"""A CPU backend variant that pins the number of threads."""
from dataclasses import dataclass

from agentgym_core.components import Backend


class $cls(Backend):
    name = "$name"
    dist_backend = "gloo"

    @dataclass
    class Config:
        threads: int = 1

    def __init__(self, threads: int = 1):
        self.threads = threads

    def is_available(self):
        return True, ""

    def device(self, local_rank=0):
        return "cpu"

    def setup(self):
        import torch

        torch.set_num_threads(self.threads)
''',
}

TESTS = {
    "env": '''\
from agentgym_core.testing import check_env

from $package.component import $cls


def test_contract():
    check_env($cls)


def test_binary_search_solves():
    env = $cls()
    env.reset(task_id=7)
    low, high = 1, 20
    for _ in range(6):
        guess = (low + high) // 2
        obs, reward, done, info = env.step(f"guess {guess}")
        if done:
            break
        low, high = (guess + 1, high) if obs.startswith("Higher") else (low, guess - 1)
    assert done and info["success"] and reward == 1.0
''',
}
GENERIC_TEST = '''\
from agentgym_core.plugins import get_plugin_manager


def test_registered():
    manager = get_plugin_manager(fresh=True)
    assert "$name" in manager.registry("$registry")
    assert manager.registry("$registry").load("$name").__name__ == "$cls"
'''

README = """\
# $dist

An AgentGym $kind plugin, created with `agentgym new plugin $name --kind $kind`.

```bash
pip install -e .
agentgym plugins            # lists '$name'
agentgym list $registry      # shows '$name'
pytest tests
```

Edit `$package/component.py`; `$package/plugin.py` registers it by import string, so
listing plugins never imports it.
"""


def create_plugin(name: str, kind: str, directory: Path) -> Path:
    """Write a plugin package for component *name* of *kind* into *directory*/<dist>. Returns its path."""
    if kind not in KIND_TO_REGISTRY:
        raise AgentGymError(f"unknown plugin kind {kind!r}; choose one of {', '.join(KIND_TO_REGISTRY)}")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name) or keyword.iskeyword(name):
        raise AgentGymError(
            f"plugin name {name!r} must be lower-case letters, digits and '_' and start with a letter"
        )
    dist = f"agentgym-{kind}-{name.replace('_', '-')}"
    package = f"agentgym_{kind}_{name}"
    cls = "".join(part.capitalize() for part in name.split("_")) + kind.capitalize()
    target = Path(directory) / dist
    if target.exists():
        raise AgentGymError(f"{target} already exists; choose another name or directory")
    values = dict(name=name, kind=kind, dist=dist, package=package, cls=cls, registry=KIND_TO_REGISTRY[kind])
    files = {
        "pyproject.toml": PYPROJECT,
        "README.md": README,
        f"{package}/__init__.py": "",
        f"{package}/plugin.py": PLUGIN,
        f"{package}/component.py": COMPONENTS[kind],
        f"tests/test_{name}_{kind}.py": TESTS.get(kind, GENERIC_TEST),
    }
    for rel, text in files.items():
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(Template(text).substitute(values))
    return target
