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
from .kinds import SCAFFOLD_KINDS
from .scaffold_engine import ENGINE_COMPONENT, ENGINE_TEST
from .scaffold_trainer import TRAINER_COMPONENT, TRAINER_TEST

# An engine template is a toy model in plain Python that passes the engine checks (docs/engines.md walks
# through it); plugins/engines/hf is the real one. A trainer is small on top of core's lifecycle
# (agentgym_core.Trainer): the template learns which system prompt makes the model act best;
# plugins/trainers/sft is a larger example.

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

[project.optional-dependencies]
# pytest and what agentgym_core.testing needs, for this plugin's own tests
test = ["agentgym-core[testing]"]

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
"""A guessing game: find the number between 1 and 20 from "higher"/"lower" hints.

The whole BaseEnv contract is in docs/plugins.md of the AgentGym repository.
"""
import random
from dataclasses import dataclass

from agentgym_core import BaseEnv, ConfigError, config_from


@dataclass
class ${cls}Config:
    """Options of the ``$name`` env: the ``env`` section of a run config
    (``env: {name: $name, max_guesses: 6}``), ``agentgym env play $name --options '{"max_guesses": 6}'``
    or ``$cls(max_guesses=6)``. Declared here only: ``__init__`` takes them as ``**options``; a bad
    value fails when the config loads, before anything starts."""

    #: Guesses before the episode ends as a failure.
    max_guesses: int = 10
    #: Held-out tasks (the test split), after the 1,000 training tasks.
    test_tasks: int = 100

    def __post_init__(self):
        for key, value in (("max_guesses", self.max_guesses), ("test_tasks", self.test_tasks)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"env.{key} must be an integer >= 1, got {value!r}")


class $cls(BaseEnv):
    instruction = (
        "Guess the secret number between 1 and 20. After each guess you are told whether the "
        "secret is higher or lower.\\nReply as: Thought: <reasoning> Action: guess <number>"
    )
    action_format = "react"
    Config = ${cls}Config

    def __init__(self, **options):
        super().__init__()
        self.config = config_from(self, options)  # raises ConfigError naming an unknown or bad option
        self.max_guesses, self.test_tasks = self.config.max_guesses, self.config.test_tasks
        self.secret, self.guesses = 0, 0

    def splits(self):
        return {"train": range(0, 1000), "test": range(1000, 1000 + self.test_tasks)}

    def category(self, task_id):
        """Evaluations report success per category."""
        return "low" if self._secret_of(task_id) <= 10 else "high"

    @staticmethod
    def _secret_of(task_id):
        return random.Random(task_id).randint(1, 20)

    def reset(self, *, task_id=None, seed=None):
        if task_id is None:  # no task id: a random training task
            task_id = random.Random(seed).choice(self.splits()["train"])
        self.secret, self.guesses = self._secret_of(task_id), 0
        return f"I picked a number between 1 and 20. You have {self.max_guesses} guesses."

    def step(self, action):
        parts = action.split()
        if len(parts) != 2 or parts[0] != "guess" or not parts[1].isdigit():
            return "Invalid action. Use: guess <number>", 0.0, False, {"invalid_action": True}
        guess = int(parts[1])
        self.guesses += 1
        if guess == self.secret:
            return "Correct!", 1.0, True, {"success": True}
        if self.guesses >= self.max_guesses:
            return f"Out of guesses: it was {self.secret}.", 0.0, True, {"success": False}
        return ("Higher." if guess < self.secret else "Lower."), 0.0, False, {}
''',
    "reward": '''\
"""A small cost for every turn, so that shorter successful episodes score higher."""
from dataclasses import dataclass

from agentgym_core import Reward, config_from


class $cls(Reward):
    @dataclass
    class Config:
        #: Cost of every turn.
        cost: float = 0.01

    def __init__(self, **options):
        self.config = config_from(self, options)  # the options are declared once, in Config
        self.cost = self.config.cost

    def __call__(self, trajectory):
        return [-self.cost] * len(trajectory.turns)
''',
    "scheduler": '''\
"""Doubles the horizon every `every` steps, from `start` up to `limit` turns."""
from dataclasses import dataclass

from agentgym_core import Scheduler, config_from


class $cls(Scheduler):
    @dataclass
    class Config:
        start: int = 2
        every: int = 50
        limit: int = 16

    def __init__(self, **options):
        self.config = config_from(self, options)  # the options are declared once, in Config

    def max_turns(self, step):
        c = self.config
        return min(c.limit, c.start * 2 ** (step // c.every))
''',
    "backend": '''\
"""A CPU backend variant that pins the number of threads."""
from dataclasses import dataclass

from agentgym_core import Backend, config_from


class $cls(Backend):
    name = "$name"
    dist_backend = "gloo"

    @dataclass
    class Config:
        threads: int = 1

    def __init__(self, **options):
        self.config = config_from(self, options)  # the options are declared once, in Config
        self.threads = self.config.threads

    def is_available(self):
        return True, ""

    def device(self, local_rank=0):
        return "cpu"

    def setup(self):
        import torch

        torch.set_num_threads(self.threads)
''',
    "trainer": TRAINER_COMPONENT,
    "engine": ENGINE_COMPONENT,
}

TESTS = {
    "engine": ENGINE_TEST,
    "env": '''\
import pytest

from agentgym_core import ConfigError, check_env, play_over_http

from $package.component import $cls


def test_contract():
    check_env($cls)  # also: the options are declared once, in ${cls}Config
    check_env($cls, options={"max_guesses": 3, "test_tasks": 5})


def test_options_are_checked():
    with pytest.raises(ConfigError, match="env.max_guesses must be an integer >= 1"):
        $cls(max_guesses=0)
    with pytest.raises(ConfigError, match="unknown option 'max_guess'. Did you mean 'max_guesses'"):
        $cls(max_guess=3)
    assert len($cls(test_tasks=5).splits()["test"]) == 5


def test_out_of_guesses_ends_the_episode():
    env = $cls(max_guesses=1)
    env.reset(task_id=7)
    wrong = 1 if env.secret != 1 else 2
    obs, reward, done, info = env.step(f"guess {wrong}")
    assert done and not info["success"] and reward == 0.0 and "Out of guesses" in obs


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


def test_over_http():
    """Served by `agentgym env serve $name` (the package must be installed: pip install -e .)."""
    bounds = {"low": 1, "high": 20}

    def policy(observation):
        if observation.startswith("Higher"):
            bounds["low"] = policy.guess + 1
        elif observation.startswith("Lower"):
            bounds["high"] = policy.guess - 1
        policy.guess = (bounds["low"] + bounds["high"]) // 2
        return f"guess {policy.guess}"

    transcript = play_over_http("$name", 7, policy, invalid_action="jump", invalid_hint="guess <number>")
    assert transcript.success and transcript.info["splits"] == {"train": 1000, "test": 100}
''',
}
GENERIC_TEST = '''\
from agentgym_core import check_component_options, get_plugin_manager


def test_registered():
    manager = get_plugin_manager(fresh=True)
    assert "$name" in manager.registry("$registry")
    assert manager.registry("$registry").load("$name").__name__ == "$cls"


def test_options_are_declared_once_in_config():
    check_component_options(get_plugin_manager(fresh=True).registry("$registry").load("$name"), "$registry")
'''

README = """\
# $dist

An AgentGym $kind plugin, created with `agentgym new plugin $name --kind $kind`.

```bash
pip install -e '.[test]'    # the test extra brings pytest (agentgym-core[testing])
agentgym plugins            # lists '$name'
agentgym list $registry      # shows '$name'
pytest tests
```

Edit `$package/component.py`; `$package/plugin.py` registers it by import string, so
listing plugins never imports it. What a component must do, and the testing kit
(`check_env`, `play_over_http`, the `plugin_manager`/`register_plugin` fixtures), are in
`docs/plugins.md` of the AgentGym repository.
"""


def create_plugin(name: str, kind: str, directory: Path) -> Path:
    """Write a plugin package for component *name* of *kind* into *directory*/<dist>. Returns its path."""
    if kind not in SCAFFOLD_KINDS:
        raise AgentGymError(f"unknown plugin kind {kind!r}; choose one of {', '.join(SCAFFOLD_KINDS)}")
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
    values = dict(name=name, kind=kind, dist=dist, package=package, cls=cls, registry=SCAFFOLD_KINDS[kind])
    files = {
        "pyproject.toml": PYPROJECT,
        "README.md": README,
        f"{package}/__init__.py": "",
        f"{package}/plugin.py": PLUGIN,
        f"{package}/component.py": COMPONENTS[kind],
        f"tests/test_{name}_{kind}.py": TESTS.get(kind, TRAINER_TEST if kind == "trainer" else GENERIC_TEST),
    }
    for rel, text in files.items():
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(Template(text).substitute(values))
    return target
