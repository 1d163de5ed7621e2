"""``agentgym list loggers``, a switched-off plugin's components, the closing line of a run without
``agentgym-inspect``, and core's install hints (a command that works where core came from)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from agentgym_core import catalogue


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agentgym_core.cli.main", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **env})


def test_list_loggers_shows_the_plugins_observing_a_run():
    pytest.importorskip("agentgym_logger_wandb", reason="the W&B logger plugin is the logger this test lists")
    out = _cli("list", "loggers")
    assert out.returncode == 0, out.stderr
    lines = {line.split()[0]: line for line in out.stdout.splitlines()}
    assert "on_step_end" in lines["wandb"] and "[agentgym-logger-wandb]" in lines["wandb"]
    off = _cli("list", "loggers", AGENTGYM_DISABLE_PLUGINS="wandb")
    assert "wandb " not in off.stdout and "switched off: plugin 'wandb' (agentgym-logger-wandb)" in off.stdout


def test_a_switched_off_env_is_said_to_be_switched_off_not_missing():
    out = _cli("list", "envs", AGENTGYM_LOAD_PLUGINS="babyai")
    assert out.returncode == 0 and out.stdout.startswith("babyai "), out.stdout
    assert ("switched off: plugin 'textcraft' (agentgym-env-textcraft) by AGENTGYM_LOAD_PLUGINS='babyai'; "
            "its envs (textcraft) not listed") in out.stdout
    none = _cli("list", "envs", AGENTGYM_LOAD_PLUGINS="")
    assert none.stdout.startswith("no envs registered (installed ones are switched off)"), none.stdout
    assert "no envs installed" not in none.stdout


def test_closing_line_without_the_report_command_says_what_is_missing():
    from agentgym_core.finish import closing_line
    from agentgym_core.plugins import get_plugin_manager

    full = closing_line("/x/runs/a", get_plugin_manager(fresh=True))
    assert "agentgym report|view" in full
    manager = get_plugin_manager(fresh=True)
    manager.unregister("inspect")
    line = closing_line("/x/runs/a", manager)
    assert "agentgym report|view" not in line and "no plots and no report.html were written" in line
    assert "'agentgym-inspect'" in line


def test_install_hint_from_this_checkout_names_its_folders_and_the_missing_siblings(monkeypatch):
    from importlib import metadata

    assert catalogue.install_source()[0] == "checkout"
    real = metadata.version

    def without_hf(name: str) -> str:  # as if agentgym-hf and the hf engine were not installed
        if name in ("agentgym-hf", "agentgym-engine-hf"):
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(metadata, "version", without_hf)
    hint = catalogue.install_hint("agentgym-engine-hf")
    assert hint.endswith("install -c constraints.txt -e plugins/libs/hf -e plugins/engines/hf") or (
        "plugins/libs/hf -e " in hint and hint.endswith("plugins/engines/hf")), hint


def test_install_hint_from_a_wheel_folder(tmp_path, monkeypatch):
    wheel = tmp_path / "agentgym_env_babyai-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"")
    monkeypatch.setattr(catalogue, "install_source", lambda: ("wheels", tmp_path))
    hint = catalogue.install_hint("agentgym-env-babyai")
    assert f"install --find-links {tmp_path} {wheel}" in hint
    hint = catalogue.install_hint("agentgym-env-lightsout-unknown")
    assert "--find-links" in hint and "no wheel of agentgym-env-lightsout-unknown" in hint
