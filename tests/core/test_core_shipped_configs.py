"""Every run config shipped in configs/ loads and validates against the installed plugins, stages included
(`agentgym config show -c FILE`, the check `agentgym train` runs first): a renamed option or a typo in one
of them would otherwise surface only hours into a user's pipeline."""
import subprocess
import sys
from pathlib import Path

import pytest

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs").glob("*.yaml"))


def test_there_are_configs_to_check():
    assert {"quickstart.yaml", "textcraft-sft-rl.yaml", "babyai-sft-rl.yaml"} <= {p.name for p in CONFIGS}


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_a_shipped_config_validates(path, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "agentgym_core.cli.main", "config", "show", "-c", str(path)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "name:" in proc.stdout


def test_a_typo_in_a_stage_is_caught(tmp_path):
    """The check reaches into `stages:` (what the test above relies on)."""
    bad = tmp_path / "bad.yaml"
    bad.write_text((Path(__file__).resolve().parents[2] / "configs" / "babyai-sft-rl.yaml").read_text()
                   .replace("demos_episodes:", "demos_episodez:"))
    proc = subprocess.run([sys.executable, "-m", "agentgym_core.cli.main", "config", "show", "-c", str(bad)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 1 and "stages[0] (sft): unknown config key 'trainer.demos_episodez'" in proc.stderr
