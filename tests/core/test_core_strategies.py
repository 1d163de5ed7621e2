"""Strategies as a component kind: the hook, the registry, ``agent.strategy`` in configs, ``agentgym list``."""
from __future__ import annotations

import types
from dataclasses import dataclass

import pytest

from agentgym_core import hookimpl
from agentgym_core.config import build_component, load_config
from agentgym_core.errors import ConfigError
from agentgym_core.rollout.strategy import Strategy


class TwiceStrategy(Strategy):
    """An in-test strategy with one option."""

    name = "twice"

    @dataclass
    class Config:
        attempts: int = 2

        def __post_init__(self):
            if self.attempts < 1:
                raise ValueError(f"agent.strategy.attempts must be >= 1, got {self.attempts}")

    def __init__(self, attempts: int = 2):
        self.max_attempts = attempts


@pytest.fixture
def twice(plugin_manager, register_plugin):
    mod = types.ModuleType("twice_plugin")
    mod.register_strategies = hookimpl(lambda registry: registry.add(
        "twice", f"{__name__}:TwiceStrategy", description="plays twice"))
    register_plugin(mod, name="twice")
    return plugin_manager


def test_hook_register_strategies(twice):
    registry = twice.registry("strategies")
    assert registry.names() == ["default", "twice"]
    assert registry.get("default").plugin == "core" and registry.get("twice").plugin == "twice"
    assert registry.load("default") is Strategy
    built = registry.build("twice", attempts=3)
    assert isinstance(built, TwiceStrategy) and built.max_attempts == 3


def test_default_strategy_is_the_plain_loop():
    s = Strategy()
    assert (s.name, s.max_attempts, s.keep_in_context) == ("default", 1, ())
    traj = types.SimpleNamespace(turns=[])
    assert s.message(traj, "first observation") == ("first observation", "action")


def test_agent_strategy_in_a_config(twice):
    cfg = load_config(None, [], manager=twice)
    assert dict(cfg.agent.strategy) == {"name": "default"}
    for overrides in (["agent.strategy=twice"], ["agent.strategy.name=twice"]):
        assert dict(load_config(None, overrides, manager=twice).agent.strategy) == {"name": "twice", "attempts": 2}
    cfg = load_config(None, ["agent.strategy.name=twice", "agent.strategy.attempts=5"], manager=twice)
    assert dict(cfg.agent.strategy) == {"name": "twice", "attempts": 5}
    assert build_component(twice, "strategies", cfg.agent.strategy).max_attempts == 5


def test_agent_strategy_from_a_file(twice, tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("agent:\n  history_window: 2\n  strategy: {name: twice, attempts: 4}\n")
    cfg = load_config(path, manager=twice)
    assert cfg.agent.history_window == 2 and dict(cfg.agent.strategy) == {"name": "twice", "attempts": 4}
    path.write_text("agent:\n  strategy: twice\n")
    assert load_config(path, manager=twice).agent.strategy.name == "twice"


@pytest.mark.parametrize("overrides, message", [
    (["agent.strategy.name=twice", "agent.strategy.atempts=3"],
     "unknown config key 'agent.strategy.atempts'. Did you mean 'attempts'?"),
    (["agent.strategy.name=twice", "agent.strategy.attempts=0"], "agent.strategy.attempts must be >= 1, got 0"),
    (["agent.strategy=twise"], "unknown strategy 'twise'. Did you mean 'twice'?"),
    (["agent.strategy.attempts=3"], "Valid keys under agent.strategy (strategy 'default'): name"),
    (["agent.stratgy=twice"], "unknown config key 'agent.stratgy'. Did you mean 'strategy'?"),
    (["agent.strategy=reflect"], "agentgym-strategy-basic"),
])
def test_bad_strategy_config_names_the_key(twice, overrides, message):
    with pytest.raises(ConfigError) as err:
        load_config(None, overrides, manager=twice)
    assert message in str(err.value)


def test_list_strategies_cli():
    from click.testing import CliRunner

    from agentgym_core.cli.main import cli

    result = CliRunner().invoke(cli, ["list", "strategies"])
    assert result.exit_code == 0, result.output
    assert "default" in result.output and "one episode per task" in result.output
