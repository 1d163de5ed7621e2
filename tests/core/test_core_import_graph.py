"""Core's modules import each other in one direction: no circle, deferred imports counted.

A function-level import hides a circle from Python but not from a reader, so the scan counts
it like a module-level one. The one exception is an import deferred to keep start-up light,
marked on its line with ``# light start-up: <why>``; ``TYPE_CHECKING`` imports never run.
"""
from __future__ import annotations

import ast
from pathlib import Path

import agentgym_core

MARK = "# light start-up"


def _modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package at *root*."""
    out = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def import_edges(root: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports, at module level or in a function (not marked light)."""
    modules = _modules(root)
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        lines = path.read_text(encoding="utf-8").splitlines()
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]

        def add(target: str, node: ast.stmt, name: str = name, lines: list[str] = lines) -> None:
            if MARK in lines[node.lineno - 1] or target == name:
                return
            while target and target not in modules:  # an attribute of a module: the module
                target = target.rpartition(".")[0]
            if target and target != name:
                edges[name].add(target)

        def visit(node: ast.AST, package: list[str] = package) -> None:
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                for child in node.orelse:
                    visit(child)
                return
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == root.name:
                        add(alias.name, node)
            elif isinstance(node, ast.ImportFrom):
                base = package[:len(package) - node.level + 1] if node.level else []
                module = ".".join(base + ([node.module] if node.module else [])) if node.level else node.module or ""
                if module.split(".")[0] == root.name:
                    for alias in node.names:
                        add(f"{module}.{alias.name}", node)
            for child in ast.iter_child_nodes(node):
                visit(child)

        visit(ast.parse("\n".join(lines)))
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return found


def test_core_has_no_import_cycle_counting_deferred_imports():
    root = Path(agentgym_core.__file__).parent
    edges = import_edges(root)
    assert len(edges) > 50 and edges["agentgym_core.assembly"]  # the scan read core
    found = cycles(edges)
    detail = [[f"{m} -> {', '.join(sorted(edges[m] & set(c)))}" for m in c] for c in found]
    assert not found, f"import cycles in agentgym_core (deferred imports counted): {detail}"


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    root.mkdir()
    for name, text in {"__init__.py": "", **files}.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_the_scan_sees_a_cycle_hidden_in_a_function(tmp_path):
    root = _package(tmp_path, {
        "a.py": "from .b import g\n\ndef f():\n    return g()\n",
        "b.py": "def g():\n    from .a import f  # dodges the circle at import time\n    return f\n",
        "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import f\n",
    })
    edges = import_edges(root)
    assert edges["pkg.b"] == {"pkg.a"} and edges["pkg.c"] == set()
    assert cycles(edges) == [["pkg.a", "pkg.b"]]


def test_an_import_marked_light_start_up_is_not_counted(tmp_path):
    root = _package(tmp_path, {
        "a.py": "from .b import g\n",
        "b.py": "def g():\n    import pkg.a  # light start-up: a is heavy\n",
    })
    assert cycles(import_edges(root)) == []


def test_no_source_file_outside_bench_and_tests_is_over_400_lines():
    """A module a newcomer reads in one sitting (issue 40): split a longer one by what its parts do."""
    repo = Path(__file__).resolve().parents[2]
    roots = [repo / "agentgym_core", *sorted((repo / "plugins").glob("*/*"))]
    long = []
    for root in roots:
        for path in root.rglob("*.py"):
            rel = path.relative_to(repo)
            if {"tests", "bench", "node_modules"} & set(rel.parts) or rel.name == "conftest.py":
                continue
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > 400:
                long.append(f"{rel}: {lines} lines")
    assert not long, "split these modules:\n" + "\n".join(long)
