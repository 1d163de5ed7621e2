"""Config composition and validation against component dataclasses."""
import types
from dataclasses import dataclass, field

import pytest
from omegaconf.errors import ReadonlyConfigError

from agentgym_core import hookimpl
from agentgym_core.components import Trainer
from agentgym_core.config import build_component, load_config
from agentgym_core.errors import ConfigError


@dataclass
class LoraOptions:
    r: int = 8
    alpha: float = 16.0


class DemoTrainer(Trainer):
    @dataclass
    class Config:
        lr: float = 1e-5
        algorithm: str = "grpo"
        epochs: int = 1
        lora: LoraOptions = field(default_factory=LoraOptions)

        def __post_init__(self):
            if self.epochs < 1:
                raise ValueError(f"trainer.epochs must be >= 1, got {self.epochs}")


@pytest.fixture
def manager(plugin_manager, register_plugin):
    mod = types.ModuleType("demo_trainer_plugin")
    mod.register_trainers = hookimpl(lambda registry: registry.add("rl", f"{__name__}:DemoTrainer"))
    register_plugin(mod, name="demo")
    return plugin_manager


def test_defaults_fill_every_section(manager):
    cfg = load_config(None, [], manager)
    assert cfg.trainer.lr == 1e-5 and cfg.trainer.lora.r == 8
    assert cfg.scheduler.name == "fixed" and cfg.scheduler.turns == 10
    assert cfg.backend.name == "auto"
    assert [r.name for r in cfg.rewards] == ["success"] and cfg.rewards[0].weight == 1.0
    assert "env" not in cfg  # no default env


def test_files_then_overrides(manager, tmp_path):
    a = tmp_path / "a.yaml"
    a.write_text("trainer: {lr: 1.0e-4, algorithm: rloo}\nscheduler: {turns: 4}\n")
    b = tmp_path / "b.yaml"
    b.write_text("trainer: {lr: 2.0e-4}\n")
    cfg = load_config([a, b], ["trainer.epochs=3", "trainer.lora.r=4"], manager)
    assert (cfg.trainer.lr, cfg.trainer.algorithm, cfg.trainer.epochs, cfg.trainer.lora.r) == (2e-4, "rloo", 3, 4)
    assert cfg.scheduler.turns == 4


def test_misspelt_key_names_full_path_and_suggests(manager):
    with pytest.raises(ConfigError) as exc:
        load_config(None, ["trainer.lrr=1"], manager)
    assert "trainer.lrr" in str(exc.value) and "Did you mean 'lr'?" in str(exc.value)
    with pytest.raises(ConfigError, match=r"trainer\.lora\.rr.*Did you mean 'r'"):
        load_config(None, ["trainer.lora.rr=2"], manager)
    with pytest.raises(ConfigError, match=r"rollout\.group_sise.*group_size"):
        load_config(None, ["rollout.group_sise=2"], manager)


def test_unknown_section(manager):
    with pytest.raises(ConfigError, match="unknown config section 'trainr'.*Did you mean 'trainer'"):
        load_config(None, ["trainr.lr=1"], manager)


def test_wrong_type_names_key(manager):
    with pytest.raises(ConfigError, match=r"trainer\.lr"):
        load_config(None, ["trainer.lr=fast"], manager)
    with pytest.raises(ConfigError, match=r"rollout\.group_size"):
        load_config(None, ["rollout.group_size=[1,2]"], manager)


def test_negative_sizes_rejected(manager):
    with pytest.raises(ConfigError, match="rollout.group_size must be >= 1"):
        load_config(None, ["rollout.group_size=-2"], manager)
    with pytest.raises(ConfigError, match="trainer.epochs must be >= 1"):
        load_config(None, ["trainer.epochs=0"], manager)
    with pytest.raises(ConfigError, match="turns must be >= 1"):
        build_component(manager, "schedulers", load_config(None, ["scheduler.turns=0"], manager).scheduler)


def test_unknown_component_name(manager):
    with pytest.raises(ConfigError, match=r"scheduler\.name.*unknown scheduler 'fixd'.*Did you mean 'fixed'"):
        load_config(None, ["scheduler.name=fixd"], manager)
    with pytest.raises(ConfigError, match="agentgym-scheduler-scaling"):
        load_config(None, ["scheduler.name=scaling_inter"], manager)


def test_shorthand_and_reward_list(manager, tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("backend: cpu\nrewards: [success]\n")
    cfg = load_config(f, [], manager)
    assert cfg.backend.name == "cpu" and cfg.backend.threads == 0
    assert cfg.rewards[0].name == "success" and cfg.rewards[0].weight == 1.0
    with pytest.raises(ConfigError, match=r"rewards\[0\]\.wieght.*weight"):
        load_config(None, ["rewards=[{name: success, wieght: 2}]"], manager)


def test_config_is_read_only(manager):
    cfg = load_config(None, [], manager)
    with pytest.raises(ReadonlyConfigError):
        cfg.trainer.lr = 3.0


def test_build_component_passes_only_component_options(manager):
    cfg = load_config(None, ["scheduler.turns=5"], manager)
    sched = build_component(manager, "schedulers", cfg.scheduler)
    assert sched.max_turns(0) == 5


def test_bad_files(manager, tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.yaml", [], manager)
    bad = tmp_path / "bad.yaml"
    bad.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_config(bad, [], manager)
    with pytest.raises(ConfigError, match="key.path=value"):
        load_config(None, ["trainer.lr"], manager)
