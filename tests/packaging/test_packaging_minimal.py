"""A plugin author's install, from wheel files only: core (with its ``testing`` extra), the hf engine
and its library, the rl trainer, a scheduler, the shaping rewards, and their own env built as a wheel
(``agentgym new plugin guess --kind env``). What they meet: only what is installed is listed, a
switched-off env is said to be switched off, no loggers, their own tests run with the pytest the
extra brings, training without ``agentgym-inspect`` says there are no plots and how to get them, and
a missing component's hint is a command that installs it from the wheel folder.

Runs before test_packaging_wheels.py, which adds every other wheel to the same venv (conftest.py).
"""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from wheel_kit import MINIMAL, THIRD_PARTY, pip_into, run, timed, wheel_of  # noqa: E402

# Under pytest-xdist one worker runs this file and test_packaging_wheels.py, in order (the root conftest.py).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


@pytest.fixture
def author(minimal):
    if minimal.stage != "minimal":
        pytest.skip("checks the minimal install, which the full install (test_packaging_wheels.py) replaced")
    return minimal


def test_only_what_is_installed_is_listed_and_a_switched_off_env_says_so(author):
    listed = json.loads(timed("agentgym plugins --json (minimal)", author.agentgym, "plugins", "--json").stdout)
    assert {p["distribution"] for p in listed} == (set(MINIMAL) - {"agentgym-hf"}) | {THIRD_PARTY}
    commands = re.findall(r"^  (\w+)  ", author.agentgym("--help").stdout, re.M)
    assert "train" in commands and not {"view", "report", "compare"} & set(commands)
    assert author.agentgym("list", "envs").stdout.split()[0] == "guess"
    off = author.run(str(author.bin / "agentgym"), "list", "envs", env_extra={"AGENTGYM_DISABLE_PLUGINS": "guess"})
    assert off.stdout.startswith("no envs registered (installed ones are switched off)")
    assert "switched off: plugin 'guess' (agentgym-env-guess) by AGENTGYM_DISABLE_PLUGINS='guess'" in off.stdout
    assert author.agentgym("list", "loggers").stdout.startswith("no loggers installed")


def test_the_plugins_own_tests_pass_with_the_testing_extra(author, wheelhouse):
    tests = wheelhouse.parent / THIRD_PARTY / "tests"
    out = timed("the env plugin's own tests", author.run, str(author.bin / "python"), "-m", "pytest", "-q",
                "-p", "no:cacheprovider", str(tests))
    assert " passed" in out.stdout, out.stdout


def test_training_without_inspect_says_there_is_no_report_and_how_to_get_it(author, wheelhouse, tiny_model,
                                                                            tmp_path):
    cfg = tmp_path / "guess.yaml"
    cfg.write_text(f"run: {{name: guess, output_dir: {tmp_path / 'runs'}}}\nmodel: {{path: {tiny_model}}}\n"
                   "env: {name: guess}\nscheduler: {name: scaling_inter, rounds: [2]}\ntrainer: {name: rl}\n")
    out = timed("agentgym train (minimal, 1 step)", author.agentgym, "train", "-c", str(cfg), "trainer.steps=1",
                "rollout.tasks_per_step=1", "rollout.group_size=2", "rollout.max_new_tokens=4", "eval.before=false",
                "eval.after=false", "trainer.local_envs=true", "trainer.progress=false", "model.dtype=fp32",
                "engine.threads=1")
    closing = out.stdout.strip().splitlines()[-1]
    assert "no plots and no report.html were written" in closing and "agentgym report" in closing, closing
    inspect = wheel_of(wheelhouse, "agentgym-inspect")
    assert "'agentgym-inspect', which is not installed: " in closing and f"--find-links {wheelhouse} {inspect}" in closing
    run_dir = tmp_path / "runs" / "guess"
    assert not list((run_dir / "plots").glob("*.png"))
    row = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[0])
    assert row["step"] == 1 and row["kl"] is None  # no reference policy: not measured


def test_a_missing_envs_hint_is_a_command_that_installs_it(author, wheelhouse):
    """Last of this module: it installs the babyai wheel (which the full install brings anyway)."""
    res = author.run(str(author.bin / "agentgym"), "config", "show", "env.name=babyai", check=False)
    assert res.returncode == 1
    hint = re.search(r"'agentgym-env-babyai', which is not installed: (.+?)\.\s*$", res.stderr, re.S)
    assert hint, res.stderr
    command = hint.group(1).split()
    wheel = wheel_of(wheelhouse, "agentgym-env-babyai")
    assert command[:4] == [str(author.bin / "python"), "-m", "pip", "install"], command
    assert command[4:] == ["--find-links", str(wheelhouse), str(wheel)], command
    timed("install as the hint says", run, [*pip_into(author), *command[4:]], env=dict(os.environ),
          cwd=wheelhouse.parent)
    assert "babyai" in author.agentgym("list", "envs").stdout.split()
