"""What ``agentgym train`` tells its user: a second run with the same name, a broken env, Ctrl-C,
where the run was written, and a resume with nothing left to train (real CLI subprocesses)."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("agentgym_env_babyai")
pytest.importorskip("agentgym_engine_hf")
pytest.importorskip("agentgym_trainer_rl")

sys.path.insert(0, str(Path(__file__).parent))
from agentgym_hf.testing import tiny_model_dir  # noqa: E402
from rl_helpers import tiny_config  # noqa: E402


def _sigint_as_in_a_terminal() -> None:
    """The child gets Ctrl-C as a terminal delivers it, even if the test process ignores SIGINT
    (an ignored signal is inherited across exec, and Python then installs no KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)

pytestmark = pytest.mark.slow
ENV = dict(os.environ, OMP_NUM_THREADS="1", AGENTGYM_LOAD_PLUGINS="babyai,hf,rl,scaling")
CLI = [sys.executable, "-m", "agentgym_core.cli.main", "train"]
NOISE = ("Traceback", "Task was destroyed", "Event loop is closed", "Exception ignored")


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    return tiny_model_dir(tmp_path_factory.mktemp("model"))


def _train(args: list[str], cmd: list[str] = CLI) -> subprocess.CompletedProcess:
    return subprocess.run(cmd + args, env=ENV, capture_output=True, text=True, timeout=240)


def _errors(proc: subprocess.CompletedProcess) -> list[str]:
    return [line for line in proc.stderr.splitlines() if line.startswith("Error:")]


def test_same_run_name_is_refused_overwrite_replaces_and_a_finished_resume_stops_early(model, tmp_path):
    runs = tmp_path / "runs"
    args = tiny_config(model, runs, name="same", **{"trainer.steps": "1"})
    run = runs / "same"
    first = _train(args)
    assert first.returncode == 0, first.stderr
    # ENV loads no agentgym-inspect: the closing line says there is no report instead of offering one
    assert f"run: {run} (agentgym eval --model {run}); no plots and no report.html were written" in first.stdout
    assert "agentgym report|view" not in first.stdout

    again = _train(args, [sys.executable, "-X", "importtime", "-m", "agentgym_core.cli.main", "train"])
    assert again.returncode == 1
    imported = {line.rsplit("|", 1)[-1].strip() for line in again.stderr.splitlines() if line.startswith("import time")}
    assert "agentgym_core.config" in imported and not imported & {"torch", "transformers"}  # refused before those
    assert _errors(again) == [
        f"Error: {run} already holds a run (1 step logged, checkpoint step_000001): continue it with "
        f"`agentgym train --resume {run}`, start a new run with run.name=NEW, or replace it with run.overwrite=true"]
    assert "Traceback" not in again.stderr
    assert len((run / "metrics.jsonl").read_text().splitlines()) == 1

    done = _train(["--resume", str(run)])
    assert done.returncode == 0, done.stderr
    assert "resume: nothing to train" in done.stderr and "eval.after is false; nothing else to do" in done.stderr
    assert "Loading weights" not in done.stderr  # said before any model is loaded

    replaced = _train([*args, "run.overwrite=true"])
    assert replaced.returncode == 0, replaced.stderr
    assert f"run.overwrite=true: deleted the earlier run in {run}" in replaced.stderr
    assert [json.loads(x)["step"] for x in (run / "metrics.jsonl").read_text().splitlines()] == [1]

    other = runs / "notes"
    other.mkdir()
    (other / "mine.txt").write_text("not a run")
    refused = _train([*tiny_config(model, runs, name="notes"), "run.overwrite=true"])
    assert refused.returncode == 1
    assert "run.overwrite=true would delete" in refused.stderr and "not a run directory" in refused.stderr
    assert (other / "mine.txt").read_text() == "not a run"


BROKEN_ENV = '''
from agentgym_core import BaseEnv, hookimpl


class BrokenEnv(BaseEnv):
    instruction = "Say anything."
    action_format = "free"

    def reset(self, *, task_id=None, seed=None):
        return f"task {task_id}"

    def step(self, action):
        raise ValueError("boom: a bug in my env")

    def splits(self):
        return {"train": range(0, 100), "test": range(100, 110)}


@hookimpl
def register_envs(registry):
    registry.add("broken_ux_test", "ux_broken_env:BrokenEnv", description="an env whose step raises")
'''

DRIVER = '''
import sys

import ux_broken_env
from agentgym_core.cli.main import main
from agentgym_core.plugins import get_plugin_manager

get_plugin_manager().register(ux_broken_env, "ux-broken-env")
sys.exit(main(["train", *sys.argv[1:]]))
'''


def test_an_env_failing_every_episode_is_said_each_step_and_stops_the_run(model, tmp_path):
    (tmp_path / "ux_broken_env.py").write_text(textwrap.dedent(BROKEN_ENV))
    (tmp_path / "drive.py").write_text(textwrap.dedent(DRIVER))
    args = [a for a in tiny_config(model, tmp_path / "runs", name="broken") if not a.startswith("env.")]
    proc = _train([*args, "env.name=broken_ux_test", "trainer.steps=5", "trainer.max_failed_steps=2"],
                  cmd=[sys.executable, str(tmp_path / "drive.py")])
    assert proc.returncode == 1
    said = [line for line in proc.stderr.splitlines() if line.startswith("step ")]
    assert said == [f"step {n}: env 'broken_ux_test' failed 4/4 episodes: env step 1 failed: ValueError: boom: "
                    "a bug in my env" for n in (1, 2)], proc.stderr
    (error,) = _errors(proc)
    assert "env 'broken_ux_test' failed every episode in 2 steps in a row (trainer.max_failed_steps=2)" in error
    assert "boom: a bug in my env" in error and "agentgym env play broken_ux_test" in error
    assert "Traceback" not in proc.stderr
    rows = [json.loads(x) for x in (tmp_path / "runs" / "broken" / "metrics.jsonl").read_text().splitlines()]
    assert [(r["step"], r["env_failures"]) for r in rows] == [(1, 4), (2, 4)]


def test_ctrl_c_says_where_to_resume_without_asyncio_noise(model, tmp_path):
    run = tmp_path / "runs" / "stopped"
    # Longer replies: the interrupt lands in a rollout, with episodes in flight on the event loop.
    args = tiny_config(model, tmp_path / "runs", name="stopped", **{"trainer.steps": "50", "rollout.max_new_tokens": "48"})
    proc = subprocess.Popen(CLI + args, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_sigint_as_in_a_terminal,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 200
        while not (run / "checkpoints" / "latest").exists():  # step 1 checkpointed (trainer.save_every=1)
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "no checkpoint was written"
            time.sleep(0.05)
        time.sleep(0.5)  # into step 2's rollout
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal sends
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    said = [line for line in err.splitlines() if line.startswith("interrupted")]
    assert len(said) == 1, err
    assert re.fullmatch(rf"interrupted after \d+ of 50 steps; last checkpoint: step_\d{{6}} "
                        rf"\(agentgym train --resume {re.escape(str(run))} continues from it\)", said[0]), said
    assert not [n for n in NOISE if n in err], err
