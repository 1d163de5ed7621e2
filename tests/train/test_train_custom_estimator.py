"""Open registries: an estimator and a policy loss from a package outside the rl trainer, written from
docs/training.md ("Your own estimator"), installed with pip and used by ``agentgym train``."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("agentgym_env_babyai")
pytest.importorskip("agentgym_trainer_rl")

from agentgym_hf.testing import tiny_model_dir  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).parent))
from test_train_sweep import tiny_config  # noqa: E402

LOSS = '''
from agentgym_trainer_rl.registry import policy_loss


@policy_loss("unclipped", "-A * ratio, no clip (a test)")
def unclipped(logprobs, old_logprobs, advantages, mask, clip_low, clip_high):
    import torch

    loss = -advantages * torch.exp(logprobs - old_logprobs)
    return loss, torch.zeros_like(loss)
'''


def _package_from_the_docs(root: Path) -> Path:
    """The three files of docs/training.md's worked example, plus a policy loss and its hook."""
    text = (REPO / "docs" / "training.md").read_text(encoding="utf-8").split("### Your own estimator", 1)[1]
    blocks = re.findall(r"```(?:python|toml)\n# ([\w/.-]+\.(?:py|toml))[^\n]*\n(.*?)```", text, flags=re.S)
    assert [name for name, _ in blocks] == ["my_estimators/advantages.py", "my_estimators/plugin.py", "pyproject.toml"]
    pkg = root / "my-estimators"
    for name, body in blocks:
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(body, encoding="utf-8")
    (pkg / "my_estimators" / "losses.py").write_text(LOSS)
    with open(pkg / "my_estimators" / "plugin.py", "a", encoding="utf-8") as f:
        f.write('\n\n@hookimpl\ndef register_policy_losses(registry):\n'
                '    registry.add("unclipped", "my_estimators.losses:unclipped")\n')
    return pkg


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("custom-estimator")
    pkg = _package_from_the_docs(root)
    target = root / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "--target", str(target), str(pkg)],
                   check=True, capture_output=True, text=True)
    return target


def _agentgym(site: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTGYM_")}
    env.update(PYTHONPATH=str(site), OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "agentgym_core.cli.main", *args], capture_output=True, text=True,
                          env=env, timeout=600)


def test_hook_register_estimators(site, tmp_path):
    """docs/training.md's package: listed, validated like the trainer's own, and trained for one step."""
    listed = _agentgym(site, "list", "estimators")
    assert listed.returncode == 0 and "batch_mean" in listed.stdout, listed.stderr
    wrong = _agentgym(site, "config", "show", "trainer.algorithm=batch_maen")
    assert wrong.returncode == 1 and "Did you mean 'batch_mean'" in wrong.stderr
    model = tiny_model_dir(tmp_path)
    run = _agentgym(site, "train", *tiny_config(model, tmp_path / "runs", "custom", **{"trainer.algorithm": "batch_mean"}))
    assert run.returncode == 0, run.stderr
    row = json.loads((tmp_path / "runs" / "custom" / "metrics.jsonl").read_text().splitlines()[0])
    assert row["step"] == 1 and row["loss"] == row["loss"]  # a finite update with the outside estimator


def test_hook_register_policy_losses(site):
    shown = _agentgym(site, "config", "show", "trainer.policy_loss=unclipped")
    assert shown.returncode == 0 and "policy_loss: unclipped" in shown.stdout, shown.stderr
    code = ("from agentgym_trainer_rl.registry import POLICY_LOSSES\n"
            "print(POLICY_LOSSES.get('unclipped').loss.__module__)")
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.strip() == "my_estimators.losses", out.stderr


def test_a_registered_function_that_is_not_declared_is_named(tmp_path):
    pkg = tmp_path / "undeclared"
    (pkg / "undeclared_est").mkdir(parents=True)
    (pkg / "undeclared_est" / "__init__.py").write_text("def plain(batch, opt, all_reduce=None):\n    return None\n")
    (pkg / "undeclared_est" / "plugin.py").write_text(
        "from agentgym_core import hookimpl\n\n@hookimpl\ndef register_estimators(registry):\n"
        "    registry.add('plain', 'undeclared_est:plain')\n")
    (pkg / "pyproject.toml").write_text('[project]\nname = "undeclared-est"\nversion = "0.1"\n\n'
                                        '[project.entry-points.agentgym]\nundeclared = "undeclared_est.plugin"\n')
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "--target", str(target), str(pkg)], check=True, capture_output=True)
    res = _agentgym(target, "config", "show", "trainer.algorithm=grpo")
    assert res.returncode == 1
    assert "registered the advantage estimator 'plain' at 'undeclared_est:plain', which is not declared there: " \
           "put @estimator('plain', ...) on that function" in res.stderr
