"""A component's options are declared once, in its ``Config``: ``check_component_options`` and every installed component."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from agentgym_core import BaseEnv, ConfigError
from agentgym_core.errors import UnknownOptionError
from agentgym_core.options import config_from
from agentgym_core.plugins import get_plugin_manager
from agentgym_core.kinds import KINDS, SCAFFOLD_KINDS
from agentgym_core.testing import ComponentOptionsError, check_component_options, check_env

#: Options some installed components cannot do without (the external strategy needs an agent or a command).
REQUIRED = {("strategies", "external"): {"command": "true"}, ("trainers", "sft"): {"data": "demos.jsonl"}}
#: Kinds whose components are functions (commands, experts), which take no options.
FUNCTION_KINDS = ("commands", "experts")


def _registered() -> list[tuple[str, str, Any]]:
    manager = get_plugin_manager(fresh=True)
    return [(kind, entry.name, entry) for kind in KINDS if kind not in FUNCTION_KINDS
            for entry in manager.registry(kind).entries()]


@pytest.mark.parametrize("kind, name, entry", _registered(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_installed_component_declares_its_options_once(kind, name, entry):
    component = entry.load()
    if not isinstance(component, type):
        pytest.skip(f"{kind} {name!r} is a function, not a class with a Config")
    check_component_options(component, kind, required=REQUIRED.get((kind, name)))


class Dial(BaseEnv):
    instruction = "Turn the dial to the number."

    @dataclass
    class Config:
        #: Largest number on the dial.
        size: int = 9

        def __post_init__(self) -> None:
            if self.size < 1:
                raise ConfigError(f"env.size must be >= 1, got {self.size}")

    def __init__(self, **options: Any) -> None:
        super().__init__()
        self.config = config_from(self, options)

    def reset(self, *, task_id=None, seed=None):
        self.target = (task_id or 0) % self.config.size
        return f"turn to {self.target}"

    def step(self, action):
        done = action.strip() == str(self.target)
        return ("yes" if done else "no"), float(done), done, {"success": done}

    def splits(self):
        return {"train": list(range(10)), "test": [10, 11]}


class Restates(Dial):
    def __init__(self, size: int = 9, **options: Any) -> None:
        super().__init__(size=size, **options)


class Swallows(Dial):
    def __init__(self, **options: Any) -> None:
        super().__init__(**{k: v for k, v in options.items() if k == "size"})


class NoOptions(Dial):
    def __init__(self) -> None:
        super().__init__()


class NeedsOne(Dial):
    @dataclass
    class Config:
        size: int

    def __init__(self, **options: Any) -> None:
        super().__init__()
        self.config = config_from(self, options)


def test_a_component_that_follows_the_rule_passes_and_checks_its_options():
    check_env(Dial)
    check_component_options(Dial)
    assert Dial(size=4).config.size == 4
    with pytest.raises(UnknownOptionError, match=r"Dial: unknown option 'sise'\. Did you mean 'size'\? Valid options: size"):
        Dial(sise=4)
    with pytest.raises(TypeError):  # as Python's own unknown keyword is
        Dial(sise=4)
    with pytest.raises(ConfigError, match="env.size must be >= 1"):
        Dial(size=0)
    ready = Dial.Config(size=3)
    assert config_from(Dial, {}, ready).size == 3 and config_from(Dial, {"size": 5}, ready).size == 5


@pytest.mark.parametrize("cls, message", [
    (Restates, r"Restates.__init__ restates the option size = 9, which is not its \*\*options\. Declare each option once"),
    (Swallows, "Swallows accepted the unknown option 'no_such_option_for_the_check'"),
    (NoOptions, r"NoOptions.__init__ does not take \*\*options, so it cannot take its Config's fields \(size\)"),
    (NeedsOne, r"NeedsOne.Config cannot be built with no options: TypeError: .*Give every option a default"),
])
def test_a_component_that_breaks_the_rule_fails_saying_how_to_fix_it(cls, message):
    with pytest.raises(ComponentOptionsError, match=message):
        check_component_options(cls, "envs")
    with pytest.raises(ComponentOptionsError, match=message):
        check_env(cls)


def test_kind_parameters_are_not_options():
    class Engine:
        @dataclass
        class Config:
            device: str = "cpu"

        def __init__(self, model, tokenizer=None, *, dtype="auto", **options):
            self.config = config_from(self, options)

    check_component_options(Engine, "engines")
    with pytest.raises(ComponentOptionsError, match="declares model, which is not its"):
        check_component_options(Engine, "rewards")


@pytest.mark.parametrize("kind", sorted(SCAFFOLD_KINDS))
def test_the_plugin_scaffold_follows_the_rule_and_its_test_checks_it(kind, tmp_path, monkeypatch):
    import importlib

    from agentgym_core.scaffold import create_plugin

    target = create_plugin("probe", kind, tmp_path)
    monkeypatch.syspath_prepend(str(target))
    package = f"agentgym_{kind}_probe"
    module = importlib.import_module(f"{package}.component")
    check_component_options(getattr(module, f"Probe{kind.capitalize()}"), SCAFFOLD_KINDS[kind])
    generated = (target / "tests" / f"test_probe_{kind}.py").read_text()
    assert ("check_env(" if kind == "env" else "check_component_options(") in generated
