import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

BROKEN_PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"
[project]
name = "broken-agentgym-plugin"
version = "0.0.1"
[project.entry-points.agentgym]
broken = "broken_plugin.plugin"
[tool.setuptools]
packages = ["broken_plugin"]
"""


def _pip_install_target(src: Path, target: Path) -> None:
    """Install *src* (a project folder) into *target* with pip, as a user would, but isolated.

    A copy is built, so the build leaves no ``build/`` or ``*.egg-info`` in the checkout.
    """
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / src.name
        shutil.copytree(src, copy, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
             "--disable-pip-version-check", "--target", str(target), str(copy)],
            check=True, capture_output=True, text=True,
        )


@pytest.fixture(scope="session")
def third_party_site(tmp_path_factory):
    """A site dir holding the example third-party package (examples/lightsout) and a broken plugin."""
    site = tmp_path_factory.mktemp("site")
    _pip_install_target(REPO / "examples" / "lightsout", site)
    broken = tmp_path_factory.mktemp("broken_src")
    (broken / "broken_plugin").mkdir()
    (broken / "broken_plugin" / "__init__.py").write_text("")
    (broken / "broken_plugin" / "plugin.py").write_text("raise ImportError('missing dependency frobnicate')\n")
    (broken / "pyproject.toml").write_text(BROKEN_PYPROJECT)
    _pip_install_target(broken, site)
    return site


@pytest.fixture
def run_cli(third_party_site):
    """Run the real ``agentgym`` CLI in a subprocess with the third-party site on sys.path."""

    def run(*args, env=None, site=True, input=None):
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTGYM_")}
        if site:
            full_env["PYTHONPATH"] = str(third_party_site)
        full_env.update(env or {})
        return subprocess.run(
            [sys.executable, "-m", "agentgym_core.cli.main", *args],
            capture_output=True, text=True, env=full_env, input=input, timeout=120,
        )

    return run


@pytest.fixture(scope="session")
def pip_install_target():
    """``pip_install_target(src, target)``: pip-install a project folder into a site dir."""
    return _pip_install_target
