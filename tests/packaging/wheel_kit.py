"""Helpers of the packaging tests: building wheels from what a clean clone holds, a fresh venv and
running commands in it, and the timings printed at the end (conftest.py holds the fixtures)."""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path


REPO = Path(__file__).resolve().parents[2]
#: Distributions without an ``agentgym`` entry point (``agentgym plugins`` does not list them; core's
#: own defaults are listed as its internal plugin).
NOT_PLUGINS = {"agentgym-rl", "agentgym-hf", "agentgym-service"}  # libraries: no entry point

TIMINGS: dict[str, float] = {}


def timed(step: str, fn, *args, **kwargs):
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


def clean_files(folder: Path) -> list[Path]:
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


def copy_clean(folder: Path, dest: Path) -> Path:
    """Copy what a clean clone has of project *folder* to *dest* (builds write build/ and *.egg-info there)."""
    base = REPO if folder == REPO else folder
    for rel in clean_files(folder):
        target = dest / (REPO / rel).relative_to(base)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, target)
    return dest


def run(cmd: list[str], *, env: dict[str, str], cwd: Path, timeout: float = 600, input: str | None = None,
        check: bool = True):
    res = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, input=input)
    if check:
        assert res.returncode == 0, (f"{' '.join(map(str, cmd))} exited {res.returncode}:\n{res.stdout[-3000:]}\n"
                                     f"{res.stderr[-3000:]}")
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
    run(cmd, env=dict(os.environ), cwd=out)


class FreshInstall:
    """A venv with AgentGym wheels installed (not editable), and how to run things in it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        #: "minimal" (the plugin author's set) or "full" (every wheel).
        self.stage = "empty"
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

    def run(self, *args: str, env_extra: dict[str, str] | None = None, **kwargs):
        return run([str(a) for a in args], env={**self.env, **(env_extra or {})}, cwd=self.work, **kwargs)

    def agentgym(self, *args: str, **kwargs):
        return self.run(str(self.bin / "agentgym"), *args, **kwargs)

    def python(self, code: str, **kwargs):
        return self.run(str(self.bin / "python"), "-c", code, **kwargs)


#: A plugin author's set: core (with its testing extra), the hf engine with its library, the rl
#: trainer, a scheduler, the shaping rewards, and their own env (``agentgym-env-guess``).
MINIMAL = ("agentgym-core", "agentgym-hf", "agentgym-engine-hf", "agentgym-trainer-rl", "agentgym-scheduler-scaling",
           "agentgym-reward-shaping")
THIRD_PARTY = "agentgym-env-guess"


def wheel_of(folder: Path, name: str) -> Path:
    (found,) = folder.glob(f"{name.replace('-', '_')}-*.whl")
    return found


def pip_into(install: "FreshInstall") -> list[str]:
    """This venv's pip, installing into *install*'s venv (which needs no pip of its own)."""
    index = os.environ.get("AGENTGYM_TORCH_INDEX")
    return [sys.executable, "-m", "pip", "--python", str(install.bin / "python"), "install", "-q", "--no-compile",
            "-c", str(REPO / "constraints.txt"), *(["--extra-index-url", index] if index else [])]
