"""The ``rl`` plugin registers its trainer without importing torch, and its config rejects bad values."""
from __future__ import annotations

import subprocess
import sys

import pytest

from agentgym_core.config import load_config
from agentgym_core.errors import ConfigError


def test_plugin_registers_trainer_without_torch():
    code = ("import sys; import agentgym_trainer_rl.plugin as p; from agentgym_core.plugins import get_plugin_manager;"
            "m = get_plugin_manager(entrypoints=False, fresh=True); m.register(p, 'rl');"
            "print(m.registry('trainers').get('rl').target if hasattr(m.registry('trainers').get('rl'), 'target') else 'ok');"
            "assert 'torch' not in sys.modules")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def test_config_validation_names_the_key(plugin_manager, register_plugin):
    import agentgym_trainer_rl.plugin as plugin

    register_plugin(plugin, name="rl")
    cfg = load_config(None, ["trainer.name=rl", "trainer.algorithm=rloo", "trainer.lr=1e-5"], manager=plugin_manager)
    assert cfg.trainer.algorithm == "rloo" and cfg.trainer.kl_estimator == "k3"
    with pytest.raises(ConfigError, match="trainer.algorithm must be one of"):
        load_config(None, ["trainer.name=rl", "trainer.algorithm=dpo"], manager=plugin_manager)
    with pytest.raises(ConfigError, match="kl_coeff"):
        load_config(None, ["trainer.name=rl", "trainer.kl_coeff=0.1"], manager=plugin_manager)
