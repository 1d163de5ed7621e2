"""One table of plugin kinds (agentgym_core.kinds): the hookspecs, the registries, the nouns of
messages, ``agentgym list`` and the scaffold all follow it."""
from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

import agentgym_core.hookspecs as hookspecs
from agentgym_core import UnknownNameError
from agentgym_core.kinds import KINDS, PLUGIN_KINDS, REGISTRATION_HOOKS, SCAFFOLD_KINDS, SINGULAR
from agentgym_core.scaffold import COMPONENTS


def test_each_kind_has_its_registration_hookspec_and_no_hookspec_is_left_out():
    specs = {name for name, fn in inspect.getmembers(hookspecs, inspect.isfunction) if hasattr(fn, "agentgym_spec")}
    registering = {name for name in specs if name.startswith("register_")}
    assert registering == set(REGISTRATION_HOOKS.values())
    assert len({k.name for k in PLUGIN_KINDS}) == len({k.noun for k in PLUGIN_KINDS}) == len(PLUGIN_KINDS)


def test_a_plugin_registering_through_each_hook_lands_in_that_kinds_registry(plugin_manager, register_plugin):
    class Everything:
        pass

    for kind in PLUGIN_KINDS:
        def hook(registry, _kind=kind.name):
            registry.add(f"probe.{_kind}" if _kind == "experts" else f"probe_{_kind}", "collections:OrderedDict")

        setattr(Everything, kind.hook, staticmethod(hookspecs.hookimpl(hook)))
    register_plugin(Everything(), name="probe-every-kind")
    assert list(plugin_manager.registries) == list(KINDS)
    for kind in KINDS:
        assert {f"probe_{kind}", f"probe.{kind}"} & set(plugin_manager.registry(kind).names()), kind
        with pytest.raises(UnknownNameError, match=f"unknown {SINGULAR[kind]} 'nope"):
            plugin_manager.registry(kind).get("nope")


def test_the_scaffold_and_agentgym_list_follow_the_table(tmp_path):
    assert set(COMPONENTS) == set(SCAFFOLD_KINDS)
    out = subprocess.run([sys.executable, "-m", "agentgym_core.cli.main", "new", "plugin", "--help"],
                         capture_output=True, text=True, check=True).stdout
    assert "[" + "|".join(sorted(SCAFFOLD_KINDS)) + "]" in " ".join(out.split())
    listed = subprocess.run([sys.executable, "-m", "agentgym_core.cli.main", "list", "--help"],
                            capture_output=True, text=True, check=True).stdout
    assert ", ".join(KINDS) in " ".join(listed.split())
