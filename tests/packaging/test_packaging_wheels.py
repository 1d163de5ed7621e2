"""Install AgentGym as users do: wheels of core and every plugin, no ``-e``, in a fresh venv.

Editable installs hide packaging mistakes (a module or data file missing from a wheel, an
import that works only because the editable finder made it first). Here each distribution
is built as a wheel from a copy of what a clean clone holds, installed into a new venv
(torch pinned by constraints.txt, every other dependency from the package index), and the
commands run there in subprocesses, away from the checkout: ``--help`` of every command,
``plugins --json``, ``env serve`` with a wire round trip, a 1-step ``train`` with a tiny
model, ``report``, and the seed project's import path (``agentgym.envs``, ``agentgym.agents``).
The venv is the one test_packaging_minimal.py starts with the minimal set (conftest.py).
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
sys.path.insert(0, str(Path(__file__).parent))
from wheel_kit import NOT_PLUGINS, REPO, THIRD_PARTY, TIMINGS, projects, timed  # noqa: E402

# the install alone took 11 min at a load of 17; one worker runs the packaging tests (the root conftest.py)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def test_installed_from_wheels_not_from_the_checkout(fresh):
    code = ("import json, sys, agentgym, agentgym_core, agentgym_hf, torch\n"
            "print(json.dumps({'core': agentgym_core.__file__, 'umbrella': agentgym.__file__, "
            "'hf': agentgym_hf.__file__, 'torch': torch.__version__, 'path': sys.path}))")
    seen = json.loads(timed("import check", fresh.python, code).stdout)
    site = str(fresh.venv)
    assert all(seen[k].startswith(site) for k in ("core", "umbrella", "hf")), seen
    assert not [p for p in seen["path"] if p.startswith(str(REPO))], seen["path"]
    assert seen["torch"].split("+")[0] == re.search(r"^torch==(\S+)", (REPO / "constraints.txt").read_text(),
                                                    re.M).group(1)


def test_every_command_starts(fresh):
    res = timed("agentgym --help", fresh.agentgym, "--help")
    commands = re.findall(r"^  (\w+)  ", res.stdout, re.M)
    assert {"train", "eval", "rollout", "env", "plugins", "view", "report", "compare"} <= set(commands), res.stdout
    # Each command's help in its own process: a command that imports something the wheel lacks fails here.
    for command in commands:
        out = timed("agentgym <command> --help", fresh.agentgym, command, "--help")
        assert out.stdout.startswith(f"Usage: agentgym {command}"), out.stdout


def test_plugins_lists_every_distribution(fresh):
    listed = json.loads(timed("agentgym plugins --json", fresh.agentgym, "plugins", "--json").stdout)
    assert {p["distribution"] for p in listed} == set(projects()) - NOT_PLUGINS | {THIRD_PARTY}
    assert all(p["version"] == "0.1.0" for p in listed), listed
    envs = timed("agentgym list envs", fresh.agentgym, "list", "envs").stdout
    assert {"babyai", "textcraft", "sciworld", "searchqa", "webnav", "codefix", "ecommerce", "office",
            "projects"} <= set(
        line.split()[0] for line in envs.splitlines() if line.strip())


def test_env_serve_and_a_wire_round_trip(fresh):
    import httpx

    proc = subprocess.Popen([str(fresh.bin / "agentgym"), "env", "serve", "babyai", "--port", "0"], env=fresh.env,
                            cwd=fresh.work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        start = time.perf_counter()
        line = proc.stdout.readline()
        TIMINGS["env serve start"] = time.perf_counter() - start
        url = re.search(r"listening on (http://\S+)", line)
        assert url, f"no URL from env serve: {line!r} {proc.stderr.read() if proc.poll() is not None else ''}"
        with httpx.Client(base_url=url.group(1), timeout=60) as http:
            assert http.get("/health").status_code == 200
            sid = http.post("/create").json()["id"]
            first = http.post("/reset", json={"id": sid, "data_idx": 0}).json()
            assert first["done"] is False and "mission" in first["observation"].lower()
            step = http.post("/step", json={"id": sid, "action": "Thought: look. Action: turn left"}).json()
            assert set(step) >= {"observation", "reward", "done"}
            assert http.get("/observation", params={"id": sid}).json() == step["observation"]
            assert http.post("/close", json={"id": sid}).status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)


TRAIN_OVERRIDES = [
    "env.levels=[GoToRedBallGrey]", "trainer.steps=1", "rollout.tasks_per_step=1", "rollout.group_size=2",
    "rollout.max_new_tokens=4", "scheduler.rounds=[1]", "eval.before=false", "eval.after=false",
    "trainer.local_envs=true", "trainer.progress=false", "model.dtype=fp32", "engine.threads=1",
]


def test_train_one_step_then_report(fresh, tiny_model, tmp_path):
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(f"run: {{name: wheel, output_dir: {tmp_path / 'runs'}}}\nmodel: {{path: {tiny_model}}}\n"
                   "env: {name: babyai}\nscheduler: {name: scaling_inter}\ntrainer: {name: rl, algorithm: grpo}\n")
    timed("agentgym train (1 step)", fresh.agentgym, "train", "-c", str(cfg), *TRAIN_OVERRIDES)
    run = tmp_path / "runs" / "wheel"
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1]
    assert list((run / "checkpoints").glob("step_*"))
    timed("agentgym report", fresh.agentgym, "report", str(run))
    assert (run / "report.html").is_file()


SEED_IMPORTS = """
import json, sys
import agentgym.envs
assert "torch" not in sys.modules and "agentgym_env_babyai.env" not in sys.modules
from agentgym.envs import BabyAIEnv, ECommerceServiceEnv
from agentgym.agents import LLMAgent
assert "torch" not in sys.modules
try:
    from agentgym.envs import NoSuchEnv
except ImportError as exc:
    missing = str(exc)
cfg = LLMAgent(base_model={model!r}).train_config(BabyAIEnv(levels=["GoToRedBallGrey"]), method="ScalingInter-RL",
                                                   max_steps=2)
print(json.dumps({{"missing": missing, "env": cfg.env.name, "levels": list(cfg.env.levels),
                   "scheduler": cfg.scheduler.name, "steps": cfg.trainer.steps, "torch": "torch" in sys.modules}}))
"""


def test_seed_import_path_from_the_wheels(fresh, tiny_model):
    """The umbrella's wheel: agentgym.envs and agentgym.agents, lazy, mapping an env instance to a run
    config. Training itself is the CLI's above (the same trainer); with the bundled model it is
    plugins/umbrella/agentgym/tests (the seed snippet)."""
    out = timed("seed imports", fresh.python, SEED_IMPORTS.format(model=str(tiny_model)))
    seen = json.loads(out.stdout.splitlines()[-1])
    assert seen["missing"].startswith("agentgym.envs has no env class 'NoSuchEnv'")
    assert (seen["env"], seen["levels"], seen["scheduler"], seen["steps"]) == ("babyai", ["GoToRedBallGrey"],
                                                                             "scaling_inter", 2)
    assert seen["torch"] is False  # a run config is checked without loading any model
