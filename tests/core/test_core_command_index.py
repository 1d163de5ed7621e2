"""The CLI's cached command index: ``agentgym --help`` from the index imports no plugin; installing a
plugin, editing a plugin module or switching plugins off makes a fresh one; a broken plugin writes none."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

def _listed(out: subprocess.CompletedProcess) -> dict[str, str]:
    """Command -> its help line, from ``agentgym --help``."""
    text = out.stdout.split("Commands:")[1]
    rows = [line.split(None, 1) for line in text.splitlines() if line.startswith("  ") and not line.startswith("   ")]
    return {r[0]: r[1] if len(r) > 1 else "" for r in rows}




HELP_THEN_MODULES = ("import json, sys\nfrom agentgym_core.cli.main import main\nmain(['--help'])\n"
                     "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('agentgym', 'pluggy', 'hello')))))")


def _site(root: Path, name: str, *, broken: bool = False) -> Path:
    """A site folder holding plugin *name*: its package and a dist-info with the entry point, as pip leaves them."""
    site = root / f"site-{name}"
    pkg = site / f"{name}_plugin"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    body = ("raise ImportError('missing dependency frobnicate')\n" if broken else
            "from agentgym_core import hookimpl\n\n@hookimpl\ndef register_commands(registry):\n"
            f"    registry.add('{name}', '{name}_plugin.cmd:{name}', description='Say {name}.')\n")
    (pkg / "plugin.py").write_text(body)
    (pkg / "cmd.py").write_text(f"import click\n\n@click.command()\ndef {name}():\n    click.echo('{name}!')\n")
    info = site / f"{name}_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[agentgym]\n{name} = {name}_plugin.plugin\n")
    return site


def _run(code_or_args, cache: Path, site: Path | None = None, **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith("AGENTGYM_")}
    full.update(AGENTGYM_CACHE=str(cache), **env)
    if site is not None:
        full["PYTHONPATH"] = str(site)
    args = ["-c", code_or_args] if isinstance(code_or_args, str) else ["-m", "agentgym_core.cli.main", *code_or_args]
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120, env=full)


def _modules(out: subprocess.CompletedProcess) -> list[str]:
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def test_help_from_the_index_imports_no_plugin(tmp_path):
    site = _site(tmp_path, "hello")
    first = _run(HELP_THEN_MODULES, tmp_path / "cache", site)
    assert _listed(first)["hello"] == "Say hello." and "hello_plugin.plugin" in _modules(first)
    second = _run(HELP_THEN_MODULES, tmp_path / "cache", site)
    assert _listed(second) == _listed(first)
    loaded = _modules(second)
    assert "agentgym_core.plugins" not in loaded and "pluggy" not in loaded and "hello_plugin.plugin" not in loaded
    # running a plugin's command from the index imports its command module only
    assert _run(["hello"], tmp_path / "cache", site).stdout == "hello!\n"


def test_a_new_plugin_an_edited_module_or_a_switch_makes_a_fresh_index(tmp_path):
    cache, site = tmp_path / "cache", _site(tmp_path, "hello")
    _run(["--help"], cache, site)
    other = _site(tmp_path, "howdy")
    both = f"{site}{os.pathsep}{other}"
    assert _listed(_run(["--help"], cache, Path(both)))["howdy"] == "Say howdy."  # another sys.path
    assert "howdy" not in _listed(_run(["--help"], cache, Path(both), AGENTGYM_DISABLE_PLUGINS="howdy"))
    plugin = site / "hello_plugin" / "plugin.py"
    plugin.write_text(plugin.read_text().replace("Say hello.", "Say hi."))
    stat = plugin.stat()
    os.utime(plugin, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # an edit, even within the same tick
    assert _listed(_run(["--help"], cache, site))["hello"] == "Say hi."


def test_a_broken_plugin_writes_no_index_and_keeps_warning(tmp_path):
    cache, site = tmp_path / "cache", _site(tmp_path, "broken", broken=True)
    for _ in range(2):
        out = _run(["--help"], cache, site)
        assert out.returncode == 0 and "warning: plugin 'broken'" in out.stderr and "train" in out.stdout
    assert not list((cache / "cli").glob("commands-*.json")) if (cache / "cli").exists() else True
