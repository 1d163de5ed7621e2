"""Every hookspec has a section in docs/plugin_hooks.md and a test named test_hook_<name>."""
import ast
import inspect
import re
from pathlib import Path

import agentgym_core.hookspecs as hookspecs

REPO = Path(__file__).resolve().parents[2]


def _hookspecs():
    return sorted(
        name for name, fn in inspect.getmembers(hookspecs, inspect.isfunction)
        if hasattr(fn, "agentgym_spec")
    )


def test_specs_are_found():
    assert {"register_envs", "register_engines", "on_step_end"} <= set(_hookspecs())


def test_every_hook_has_a_doc_section_with_its_signature():
    doc = (REPO / "docs" / "plugin_hooks.md").read_text()
    headings = dict(re.findall(r"^## (\w+)\(([^)]*)\)$", doc, flags=re.M))
    for name in _hookspecs():
        assert name in headings, f"docs/plugin_hooks.md has no '## {name}(...)' section"
        params = list(inspect.signature(getattr(hookspecs, name)).parameters)
        assert [p.strip() for p in headings[name].split(",")] == params, f"signature of {name} differs in the docs"


def test_every_hook_has_a_docstring():
    for name in _hookspecs():
        doc = getattr(hookspecs, name).__doc__ or ""
        assert ":param" in doc and "Fires" in doc and "Returns" in doc, f"hookspec {name} lacks a full docstring"


def test_every_hook_has_a_test():
    tests = set()
    for path in (REPO / "tests").rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_hook_"):
                tests.add(node.name[len("test_hook_"):])
    missing = [name for name in _hookspecs() if name not in tests]
    assert not missing, f"hooks without a test_hook_<name> test: {missing}"
