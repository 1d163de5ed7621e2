"""The packaging tests' fixtures: the wheels of every distribution (and of a third-party env made
with ``agentgym new plugin``), built once, and one fresh venv installed from them in two stages:
first a plugin author's minimal set (:func:`minimal`, test_packaging_minimal.py), then everything
else (:func:`fresh`, test_packaging_wheels.py). Nothing comes from the checkout.

The steps' times are printed at the end (``pytest -s`` without workers shows them as they happen).
"""
from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from wheel_kit import (MINIMAL, THIRD_PARTY, TIMINGS, FreshInstall, copy_clean, build_wheels,  # noqa: E402
                       pip_into, projects, run, timed, wheel_of)


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory) -> Path:
    """Every distribution's wheel, and the third-party env's (its sources in ``<root>/guess``)."""
    root = tmp_path_factory.mktemp("packaging")
    dists = projects()
    src, wheels = root / "src", root / "wheelhouse"
    timed("copy sources", lambda: [copy_clean(folder, src / name) for name, folder in dists.items()])
    from agentgym_core.scaffold import create_plugin

    guess = create_plugin("guess", "env", root)  # what `agentgym new plugin guess --kind env` writes
    timed("build wheels", build_wheels, [*(src / name for name in dists), guess], wheels)
    names = {re.sub(r"[-_.]+", "-", w.name.split("-")[0]).lower() for w in wheels.glob("*.whl")}
    assert names == set(dists) | {THIRD_PARTY}, f"wheels built for {sorted(names)}, expected {sorted(dists)}"
    yield wheels
    shutil.rmtree(root, ignore_errors=True)  # ~1.5 GB of venv


@pytest.fixture(scope="session")
def minimal(wheelhouse) -> "FreshInstall":
    """A fresh venv with the minimal set only, from its wheel files (core with ``[testing]``)."""
    install = FreshInstall(wheelhouse.parent)
    timed("create venv", run, [sys.executable, "-m", "venv", "--without-pip", str(install.venv)],
          env=dict(os.environ), cwd=wheelhouse.parent)
    files = [f"{wheel_of(wheelhouse, 'agentgym-core')}[testing]",
             *(str(wheel_of(wheelhouse, n)) for n in (*MINIMAL[1:], THIRD_PARTY))]
    timed("install the minimal set", run, [*pip_into(install), "--find-links", str(wheelhouse), *files],
          env=dict(os.environ), cwd=wheelhouse.parent, timeout=1200)
    install.stage = "minimal"
    return install


@pytest.fixture(scope="session")
def fresh(minimal, wheelhouse) -> "FreshInstall":
    """The same venv with every other distribution's wheel added."""
    timed("install the other wheels", run, [*pip_into(minimal), "--find-links", str(wheelhouse),
                                            *map(str, sorted(wheelhouse.glob("*.whl")))],
          env=dict(os.environ), cwd=wheelhouse.parent, timeout=1200)
    minimal.stage = "full"
    return minimal


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """A tiny random model (written with this venv's agentgym-hf; the fresh venv only reads the folder)."""
    pytest.importorskip("agentgym_hf")
    from agentgym_hf.testing import tiny_model_dir

    return tiny_model_dir(tmp_path_factory.mktemp("tiny"))


def _timings_line() -> str:
    return ("packaging test timings (s): " + ", ".join(f"{k} {v:.1f}" for k, v in TIMINGS.items())
            + f"; total {sum(TIMINGS.values()):.1f}")


def pytest_sessionfinish(session):
    """Under pytest-xdist the timings go to the controller, which prints them (the root conftest.py)."""
    if TIMINGS and hasattr(session.config, "workeroutput"):
        session.config.workeroutput.setdefault("summary_lines", []).append(_timings_line())


def pytest_terminal_summary(terminalreporter):
    if TIMINGS:
        terminalreporter.write_line(_timings_line())
