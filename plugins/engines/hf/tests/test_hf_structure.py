"""The engine's modules form no import circle and use each other's public names only: the decoders
get what they need passed in (a DecodeTarget, the plain decoder's generate), not by reaching into
the engine."""
from __future__ import annotations

import ast
from pathlib import Path

import agentgym_engine_hf

PACKAGE = Path(agentgym_engine_hf.__file__).parent


def _imports() -> dict[str, list[tuple[str, list[str]]]]:
    """Module -> (module of this package it imports from, names) for every ``from .x import ...``."""
    found: dict[str, list[tuple[str, list[str]]]] = {}
    for path in sorted(PACKAGE.glob("*.py")):
        edges = found.setdefault(path.stem, [])
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.level == 1 or (node.module or "").startswith("agentgym_engine_hf")):
                module = (node.module or "").rpartition(".")[2] if node.level == 0 else (node.module or "")
                edges.append((module, [a.name for a in node.names]))
    return found


def test_no_module_imports_another_ones_underscore_names():
    private = [(m, target, n) for m, edges in _imports().items() for target, names in edges for n in names
               if n.startswith("_")]
    assert not private, private


def test_no_import_circle_and_nothing_imports_the_engine():
    graph = {m: {t for t, _ in edges} for m, edges in _imports().items()}
    assert not [m for m, targets in graph.items() if "engine" in targets], graph

    def visit(node: str, path: tuple[str, ...]) -> None:
        for nxt in graph.get(node, ()):
            assert nxt not in path, f"import circle: {' -> '.join((*path, nxt))}"
            visit(nxt, (*path, nxt))

    for module in graph:
        visit(module, (module,))
