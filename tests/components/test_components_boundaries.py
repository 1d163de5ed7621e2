"""Plugin boundaries, read from the source: no plugin imports another plugin, a library only
through its public modules, nothing private of core; core imports no plugin or library.

Plugins meet through the registries (a name in a config), never through each other's modules:
a private module of one plugin imported by another becomes an unversioned API."""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _distributions() -> dict[str, tuple[str, Path]]:
    """``{top-level package: (kind, its folder)}`` for every distribution under plugins/."""
    out = {}
    for pyproject in sorted(REPO.glob("plugins/*/*/pyproject.toml")):
        folder = pyproject.parent
        kind = folder.parent.name
        for pkg in folder.iterdir():
            if pkg.is_dir() and (pkg / "__init__.py").is_file() and pkg.name.startswith("agentgym"):
                out[pkg.name] = (kind, pkg)
    return out


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def _private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split(".")[1:])


def test_the_scan_sees_the_plugins():
    dists = _distributions()
    assert {"agentgym_engine_hf", "agentgym_trainer_rl", "agentgym_hf", "agentgym_inspect"} <= set(dists)
    assert dists["agentgym_hf"][0] == "libs"


def test_no_plugin_imports_another_plugin_or_anything_private():
    dists = _distributions()
    problems = []
    for package, (_kind, folder) in dists.items():
        for path in folder.rglob("*.py"):
            for line, module in _imports(path):
                top = module.split(".")[0]
                where = f"{path.relative_to(REPO)}:{line} imports {module}"
                if top == package or top not in dists and top != "agentgym_core":
                    continue
                if top == "agentgym_core" or dists[top][0] == "libs":
                    if _private(module):
                        problems.append(f"{where} (a private module)")
                    continue
                problems.append(f"{where} (the {dists[top][0]} plugin {top}: plugins meet through the registries)")
    assert not problems, "\n".join(problems)


def test_core_imports_no_plugin_or_library():
    dists = _distributions()
    problems = [f"{path.relative_to(REPO)}:{line} imports {module}"
                for path in (REPO / "agentgym_core").rglob("*.py") for line, module in _imports(path)
                if module.split(".")[0] in dists]
    assert not problems, "\n".join(problems)
