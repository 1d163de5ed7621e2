"""A plugin subset reuses the shipped configs: ``~key`` removes what a file sets, every component a config
names that is not installed is said in one error, and configs/minimal.yaml needs only core's own
scheduler and reward (issue 40, frictions)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentgym_core import ConfigError, load_config

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def _show(*args: str, **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith("AGENTGYM_")}
    return subprocess.run([sys.executable, "-m", "agentgym_core.cli.main", "config", "show", *args],
                          capture_output=True, text=True, env={**full, **env}, timeout=120)


def test_a_tilde_override_removes_a_key_the_files_set():
    cfg = load_config([CONFIGS / "quickstart.yaml"], ["~scheduler", "~rewards"])
    assert cfg.scheduler.name == "fixed" and [r.name for r in cfg.rewards] == ["success"]  # the defaults again
    cfg = load_config([CONFIGS / "quickstart.yaml"], ["~scheduler.step_interval", "~scheduler.rounds",
                                                      "scheduler.name=fixed", "scheduler.turns=3"])
    assert dict(cfg.scheduler) == {"name": "fixed", "turns": 3}
    with pytest.raises(ConfigError, match=r"override '~scheduler.round': the config has no key .* Did you mean "
                                          r"'rounds'\?"):
        load_config([CONFIGS / "quickstart.yaml"], ["~scheduler.round"])


def test_every_missing_plugin_of_a_config_is_named_in_one_error():
    subset = {"AGENTGYM_DISABLE_PLUGINS": "scaling,shaping"}
    res = _show("-c", str(CONFIGS / "quickstart.yaml"), **subset)
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert "2 components this config names are not installed" in res.stderr
    assert "unknown scheduler 'scaling_inter'" in res.stderr and "unknown reward 'format'" in res.stderr
    reused = _show("-c", str(CONFIGS / "quickstart.yaml"), "~scheduler", "rewards=[{name: success}]", **subset)
    assert reused.returncode == 0, reused.stderr


def test_the_minimal_config_runs_on_cores_scheduler_and_reward_alone():
    res = _show("-c", str(CONFIGS / "minimal.yaml"), AGENTGYM_LOAD_PLUGINS="babyai,hf,rl")
    assert res.returncode == 0, res.stderr
    assert "name: fixed" in res.stdout and "name: success" in res.stdout
