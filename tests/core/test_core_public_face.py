"""One public face: ``agentgym_core`` exports what plugin and trainer authors use (docs/core.md);
the docs and the scaffold import only from it, and plugins import core's modules only where
docs/core.md gives the reason."""
from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import agentgym_core
import agentgym_core.hookspecs as hookspecs
from agentgym_core.kinds import SCAFFOLD_KINDS
from agentgym_core.scaffold import create_plugin

REPO = Path(__file__).resolve().parents[2]
PUBLIC = set(agentgym_core.__all__)


def test_import_is_light_and_every_public_name_resolves():
    code = ("import json, sys\nimport agentgym_core\n"
            "first = sorted(m for m in sys.modules if m.startswith(('agentgym', 'pluggy', 'omegaconf')))\n"
            "from agentgym_core import hookimpl\n"
            "hooks = sorted(m for m in sys.modules if m.startswith('agentgym'))\n"
            "missing = [n for n in agentgym_core.__all__ if getattr(agentgym_core, n, None) is None]\n"
            "print(json.dumps({'first': first, 'hooks': hooks, 'missing': missing,\n"
            "                  'heavy': [m for m in ('torch', 'transformers') if m in sys.modules]}))")
    out = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                    check=True).stdout.splitlines()[-1])
    assert out["first"] == ["agentgym_core"]  # the names load on first use
    assert out["hooks"] == ["agentgym_core", "agentgym_core.hookspecs"]
    assert out["missing"] == [] and out["heavy"] == []
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        agentgym_core.Nope  # noqa: B018


def test_the_base_classes_the_hookspecs_name_are_public():
    named = set(re.findall(r":class:`~agentgym_core\.([\w.]+)`", Path(hookspecs.__file__).read_text()))
    named.discard("registry.Registry")  # what a hook receives, not what a plugin writes
    assert len(named) >= 8 and named <= PUBLIC, named - PUBLIC
    for name in ("BaseEnv", "Reward", "Scheduler", "Backend", "Engine", "Strategy", "ContextPolicy", "Trainer"):
        assert name in PUBLIC


def test_docs_core_md_lists_every_public_name():
    text = (REPO / "docs" / "core.md").read_text()
    missing = [n for n in PUBLIC - {"__version__", "SAME_NAME"} if f"`{n}`" not in text]
    assert not missing, f"docs/core.md does not list {missing}"
    for name, module in agentgym_core.SAME_NAME.items():
        assert f"from agentgym_core.{module} import {name}" in text


def _core_imports_in_text(text: str) -> list[tuple[str, list[str]]]:
    """``(module, names)`` of each import of a core submodule at the start of a line of *text*."""
    found = []
    for m in re.finditer(r"^\s*from (agentgym_core\.[\w.]+) import \(?([\w, ]+)", text, flags=re.M):
        found.append((m.group(1), [n.split(" as ")[0].strip() for n in m.group(2).split(",") if n.strip()]))
    found += [(m.group(1), []) for m in re.finditer(r"^\s*import (agentgym_core\.[\w.]+)", text, flags=re.M)]
    return found


def _through_the_face(module: str, names: list[str]) -> bool:
    """Only the helpers named like their module are imported from it."""
    return bool(names) and all(agentgym_core.SAME_NAME.get(n) and module == f"agentgym_core.{agentgym_core.SAME_NAME[n]}"
                               for n in names)


def test_docs_and_examples_import_only_the_public_face():
    pages = [REPO / "README.md", *(REPO / "docs").glob("*.md"), *(REPO / "examples").rglob("*.md"),
             *(REPO / "examples").rglob("*.py"), *(REPO / "plugins").glob("*/*/README.md")]
    bad = [f"{p.relative_to(REPO)}: {m} {names}" for p in pages
           for m, names in _core_imports_in_text(p.read_text(encoding="utf-8")) if not _through_the_face(m, names)]
    assert not bad, "import these from agentgym_core itself:\n" + "\n".join(bad)


@pytest.mark.parametrize("kind", sorted(SCAFFOLD_KINDS))
def test_the_scaffold_imports_only_the_public_face(kind, tmp_path):
    target = create_plugin("probe", kind, tmp_path)
    bad = [f"{p.relative_to(target)}: {m} {names}" for p in target.rglob("*") if p.suffix in (".py", ".md")
           for m, names in _core_imports_in_text(p.read_text()) if not _through_the_face(m, names)]
    assert not bad, bad
    assert "from agentgym_core import" in (target / f"agentgym_{kind}_probe" / "component.py").read_text()


def _documented() -> dict[tuple[str, str], str]:
    """``(module, plugin folder) -> reason`` from docs/core.md's table of direct imports."""
    text = (REPO / "docs" / "core.md").read_text()
    table = text.split("## Core modules plugins import directly, and why", 1)[1]
    rows = {}
    for module, plugins, why in re.findall(r"^\| `(agentgym_core\.[\w.]+)` \| ([^|]+) \| ([^|]+) \|$", table,
                                           flags=re.M):
        for plugin in plugins.split(","):
            rows[(module, plugin.strip())] = why.strip()
    return rows


def _plugin_imports() -> dict[str, set[str]]:
    """Plugin package file (relative to plugins/) -> the core submodules it imports (tests and benches aside;
    the helpers named like their module, imported from it, are the face's)."""
    out = {}
    for path in (REPO / "plugins").rglob("*.py"):
        rel = path.relative_to(REPO / "plugins")
        if {"tests", "bench"} & set(rel.parts) or rel.name in ("conftest.py", "setup.py"):
            continue
        modules = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("agentgym_core."):
                if not _through_the_face(node.module, [a.name for a in node.names]):
                    modules.add(node.module)
            elif isinstance(node, ast.Import):
                modules |= {a.name for a in node.names if a.name.startswith("agentgym_core.")}
        out[rel.as_posix()] = modules
    return out


def test_plugins_import_core_modules_only_for_a_documented_reason():
    documented, imports = _documented(), _plugin_imports()
    assert len(documented) >= 10 and all(documented.values())
    undocumented, used = [], set()
    for rel, modules in sorted(imports.items()):
        plugin = "/".join(rel.split("/")[:2])
        for module in sorted(modules):
            if (module, plugin) in documented:
                used.add((module, plugin))
            else:
                undocumented.append(f"plugins/{rel} imports {module}")
    assert not undocumented, ("import public names from agentgym_core; a core module a plugin really needs goes "
                              "in docs/core.md's table with its reason:\n" + "\n".join(undocumented))
    assert not set(documented) - used, f"docs/core.md gives reasons no plugin uses: {set(documented) - used}"
