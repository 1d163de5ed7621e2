"""Install AgentGym as users do: wheels of core and every plugin, no ``-e``, in a fresh venv.

Editable installs hide packaging mistakes (a module or data file missing from a wheel, an
import that works only because the editable finder made it first). Here each distribution
is built as a wheel from a copy of what a clean clone holds, installed into a new venv
(torch pinned by constraints.txt, every other dependency from the package index), and the
commands run there in subprocesses, away from the checkout: ``--help`` of every command,
``plugins --json``, ``env serve`` with a wire round trip, a 1-step ``train`` with a tiny
model, ``report``, and the seed project's import path (``agentgym.envs``, ``agentgym.agents``).

The steps' times are printed at the end (``pytest -s`` shows them as they happen).
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: Distributions without an ``agentgym`` entry point (``agentgym plugins`` does not list them; core's
#: own defaults are listed as its internal plugin).
NOT_PLUGINS = {"agentgym", "agentgym-hf", "agentgym-service"}  # libraries: no entry point

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]  # the install alone took 11 min at a load of 17

TIMINGS: dict[str, float] = {}


def _timed(step: str, fn, *args, **kwargs):
    start = time.perf_counter()
    try:
        return fn(*args, **kwargs)
    finally:
        TIMINGS[step] = TIMINGS.get(step, 0.0) + time.perf_counter() - start
        print(f"[packaging] {step}: {TIMINGS[step]:.1f} s", flush=True)


def projects() -> dict[str, Path]:
    """Distribution name -> folder: core (the repository root) and every ``plugins/<kind>/<name>``."""
    found = {}
    for pyproject in [REPO / "pyproject.toml", *sorted(REPO.glob("plugins/*/*/pyproject.toml"))]:
        name = re.search(r'^name = "([^"]+)"', pyproject.read_text(), re.M)
        assert name, f"no project name in {pyproject}"
        found[name.group(1)] = pyproject.parent
    return found


def _clean_files(folder: Path) -> list[Path]:
    """The files of *folder* that a clean clone has (tracked, or new and not ignored), relative to the
    repository; core's are its pyproject, README and package only. Without git: every file but build
    outputs."""
    if folder == REPO:
        paths = ["pyproject.toml", "README.md", "agentgym_core"]
    else:
        paths = [str(folder.relative_to(REPO))]
    if (REPO / ".git").exists() and shutil.which("git"):
        out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z", "--", *paths], cwd=REPO,
                             capture_output=True, text=True, check=True).stdout
        return [Path(p) for p in out.split("\0") if p and (REPO / p).is_file()]
    files = []
    for p in paths:
        root = REPO / p
        for f in [root] if root.is_file() else root.rglob("*"):
            rel = f.relative_to(REPO)
            if f.is_file() and not {"build", "__pycache__"} & set(rel.parts) and ".egg-info" not in str(rel):
                files.append(rel)
    return files


def _copy_clean(folder: Path, dest: Path) -> Path:
    """Copy what a clean clone has of project *folder* to *dest* (builds write build/ and *.egg-info there)."""
    base = REPO if folder == REPO else folder
    for rel in _clean_files(folder):
        target = dest / (REPO / rel).relative_to(base)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, target)
    return dest


def _run(cmd: list[str], *, env: dict[str, str], cwd: Path, timeout: float = 600, input: str | None = None):
    res = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, input=input)
    assert res.returncode == 0, f"{' '.join(map(str, cmd))} exited {res.returncode}:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return res


#: Builds each project with its PEP 517 backend, all in one process (what pip does with a process,
#: or two, per project: on a busy 2-core machine those starts were 3/4 of this test's build time).
BUILD_ALL = """
import os, sys
import setuptools.build_meta as backend
out = sys.argv[1]
for project in sys.argv[2:]:
    os.chdir(project)
    backend.build_wheel(out)
"""


def build_wheels(projects: list[Path], out: Path) -> None:
    """Wheels of *projects* into *out*: with setuptools' backend in one process when every project
    declares it and this venv has setuptools (its wheels hold the same files as ``pip wheel``'s),
    else with ``pip wheel`` (isolated builds)."""
    out.mkdir(parents=True, exist_ok=True)
    backends = {re.search(r'^build-backend = "([^"]+)"', (p / "pyproject.toml").read_text(), re.M).group(1)
                for p in projects}
    if backends == {"setuptools.build_meta"} and importlib.util.find_spec("setuptools"):
        cmd = [sys.executable, "-c", BUILD_ALL, str(out), *map(str, projects)]
    else:
        cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), *map(str, projects)]
    _run(cmd, env=dict(os.environ), cwd=out)


class FreshInstall:
    """A venv with every AgentGym wheel installed (not editable), and how to run things in it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.venv = root / "venv"
        self.bin = self.venv / "bin"
        self.work = root / "work"  # the commands' working directory: nothing importable there
        self.work.mkdir(parents=True)
        self.env = {
            "PATH": f"{self.bin}{os.pathsep}/usr/bin{os.pathsep}/bin",
            "HOME": os.environ.get("HOME", str(root)),
            "LANG": "C.UTF-8",
            "OMP_NUM_THREADS": "1",
            "HF_HUB_OFFLINE": "1",
            "AGENTGYM_CACHE": str(root / "cache"),
            "TMPDIR": str(root),
        }

    def run(self, *args: str, **kwargs):
        return _run([str(a) for a in args], env=self.env, cwd=self.work, **kwargs)

    def agentgym(self, *args: str, **kwargs):
        return self.run(str(self.bin / "agentgym"), *args, **kwargs)

    def python(self, code: str, **kwargs):
        return self.run(str(self.bin / "python"), "-c", code, **kwargs)


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    root = tmp_path_factory.mktemp("packaging")
    dists = projects()
    src, wheels = root / "src", root / "wheelhouse"
    _timed("copy sources", lambda: [_copy_clean(folder, src / name) for name, folder in dists.items()])
    _timed("build wheels", build_wheels, [src / name for name in dists], wheels)
    built = sorted(wheels.glob("*.whl"))
    names = {re.sub(r"[-_.]+", "-", w.name.split("-")[0]).lower() for w in built}
    assert names == set(dists), f"wheels built for {sorted(names)}, expected {sorted(dists)}"

    install = FreshInstall(root)
    _timed("create venv", _run, [sys.executable, "-m", "venv", "--without-pip", str(install.venv)],
           env=dict(os.environ), cwd=root)
    # The pip of this venv installs into the fresh one (--python), which then needs no pip of its own.
    pip = [sys.executable, "-m", "pip", "--python", str(install.bin / "python"), "install", "-q", "--no-compile"]
    index = os.environ.get("AGENTGYM_TORCH_INDEX")
    _timed("install wheels", _run, [*pip, "-c", str(REPO / "constraints.txt"), "--find-links", str(wheels),
                                    *(["--extra-index-url", index] if index else []), *map(str, built)],
           env=dict(os.environ), cwd=root, timeout=1200)
    yield install
    shutil.rmtree(root, ignore_errors=True)  # ~1.5 GB of venv


def test_installed_from_wheels_not_from_the_checkout(fresh):
    code = ("import json, sys, agentgym, agentgym_core, agentgym_hf, torch\n"
            "print(json.dumps({'core': agentgym_core.__file__, 'umbrella': agentgym.__file__, "
            "'hf': agentgym_hf.__file__, 'torch': torch.__version__, 'path': sys.path}))")
    seen = json.loads(_timed("import check", fresh.python, code).stdout)
    site = str(fresh.venv)
    assert all(seen[k].startswith(site) for k in ("core", "umbrella", "hf")), seen
    assert not [p for p in seen["path"] if p.startswith(str(REPO))], seen["path"]
    assert seen["torch"].split("+")[0] == re.search(r"^torch==(\S+)", (REPO / "constraints.txt").read_text(),
                                                    re.M).group(1)


def test_every_command_starts(fresh):
    res = _timed("agentgym --help", fresh.agentgym, "--help")
    commands = re.findall(r"^  (\w+)  ", res.stdout, re.M)
    assert {"train", "eval", "rollout", "env", "plugins", "view", "report", "compare"} <= set(commands), res.stdout
    # Each command's help in its own process: a command that imports something the wheel lacks fails here.
    for command in commands:
        out = _timed("agentgym <command> --help", fresh.agentgym, command, "--help")
        assert out.stdout.startswith(f"Usage: agentgym {command}"), out.stdout


def test_plugins_lists_every_distribution(fresh):
    listed = json.loads(_timed("agentgym plugins --json", fresh.agentgym, "plugins", "--json").stdout)
    assert {p["distribution"] for p in listed} == set(projects()) - NOT_PLUGINS
    assert all(p["version"] == "0.1.0" for p in listed), listed
    envs = _timed("agentgym list envs", fresh.agentgym, "list", "envs").stdout
    assert {"babyai", "textcraft", "sciworld", "searchqa", "webnav", "codefix", "ecommerce", "office", "projects"} <= set(
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


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A tiny random model (written with this venv's agentgym-hf; the fresh venv only reads the folder)."""
    pytest.importorskip("agentgym_hf")
    from agentgym_hf.testing import tiny_model_dir

    return tiny_model_dir(tmp_path_factory.mktemp("tiny"))


TRAIN_OVERRIDES = [
    "env.levels=[GoToRedBallGrey]", "trainer.steps=1", "rollout.tasks_per_step=1", "rollout.group_size=2",
    "rollout.max_new_tokens=4", "scheduler.rounds=[1]", "eval.before=false", "eval.after=false",
    "trainer.local_envs=true", "trainer.progress=false", "model.dtype=fp32", "engine.threads=1",
]


def test_train_one_step_then_report(fresh, tiny_model, tmp_path):
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(f"run: {{name: wheel, output_dir: {tmp_path / 'runs'}}}\nmodel: {{path: {tiny_model}}}\n"
                   "env: {name: babyai}\nscheduler: {name: scaling_inter}\ntrainer: {name: rl, algorithm: grpo}\n")
    _timed("agentgym train (1 step)", fresh.agentgym, "train", "-c", str(cfg), *TRAIN_OVERRIDES)
    run = tmp_path / "runs" / "wheel"
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1]
    assert list((run / "checkpoints").glob("step_*"))
    _timed("agentgym report", fresh.agentgym, "report", str(run))
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
    out = _timed("seed imports", fresh.python, SEED_IMPORTS.format(model=str(tiny_model)))
    seen = json.loads(out.stdout.splitlines()[-1])
    assert seen["missing"].startswith("agentgym.envs has no env class 'NoSuchEnv'")
    assert (seen["env"], seen["levels"], seen["scheduler"], seen["steps"]) == ("babyai", ["GoToRedBallGrey"],
                                                                             "scaling_inter", 2)
    assert seen["torch"] is False  # a run config is checked without loading any model


def test_timings(capsys):
    """Not a check: prints how long each step took (the module's cost in CI)."""
    with capsys.disabled():
        print("\npackaging test timings (s): " + ", ".join(f"{k} {v:.1f}" for k, v in TIMINGS.items())
              + f"; total {sum(TIMINGS.values()):.1f}")
