import sys

import pytest

from agentgym_core.errors import ComponentImportError, DuplicateNameError, UnknownNameError
from agentgym_core.registry import Registry, import_string


class _Plugin:
    """A plugin object (pluggy accepts objects as well as modules)."""

    def __init__(self, **names):
        self.names = names

    from agentgym_core import hookimpl

    @hookimpl
    def register_envs(self, registry):
        for name, target in self.names.items():
            registry.add(name, target)


def test_hook_register_envs(plugin_manager, register_plugin):
    register_plugin(_Plugin(lightsout="agentgym_core.env.base:BaseEnv"), name="lights")
    entry = plugin_manager.registry("envs").get("lightsout")
    assert entry.plugin == "lights"
    assert entry.load().__name__ == "BaseEnv"
    assert plugin_manager.plugins["lights"].registered["envs"] == ["lightsout"]


def test_registration_imports_nothing(plugin_manager, register_plugin):
    register_plugin(_Plugin(lazy="some_module_that_does_not_exist_yet:Env"), name="lazy")
    assert "lazy" in plugin_manager.registry("envs")
    assert "some_module_that_does_not_exist_yet" not in sys.modules
    with pytest.raises(ComponentImportError, match="cannot import module 'some_module_that_does_not_exist_yet'"):
        plugin_manager.registry("envs").load("lazy")


def test_duplicate_names_name_both_plugins(plugin_manager, register_plugin):
    register_plugin(_Plugin(lightsout="a:A"), name="first")
    with pytest.raises(DuplicateNameError) as exc:
        register_plugin(_Plugin(lightsout="b:B"), name="second")
    assert "'first'" in str(exc.value) and "'second'" in str(exc.value)


def test_unknown_name_suggests_and_lists(plugin_manager, register_plugin):
    register_plugin(_Plugin(lightsout="a:A", textcraft="b:B"), name="p")
    with pytest.raises(UnknownNameError) as exc:
        plugin_manager.registry("envs").get("lightout")
    msg = str(exc.value)
    assert "unknown env 'lightout'" in msg
    assert "Did you mean 'lightsout'?" in msg
    assert "Installed envs: lightsout, textcraft" in msg
    assert "may not be installed" in msg


def test_unknown_known_name_says_which_distribution():
    reg = Registry("envs")
    with pytest.raises(UnknownNameError, match="agentgym-env-babyai"):
        reg.get("babyai")


def test_invalid_registrations():
    reg = Registry("rewards")
    with pytest.raises(TypeError, match="import string"):
        reg.add("x", object)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="invalid reward name"):
        reg.add("has space", "a:b")


def test_import_string_errors():
    assert import_string("agentgym_core.registry:Registry") is Registry
    assert import_string("agentgym_core.registry.Registry") is Registry
    with pytest.raises(ComponentImportError, match="no attribute 'Nope'"):
        import_string("agentgym_core.registry:Nope")
    with pytest.raises(ComponentImportError, match="malformed"):
        import_string("nocolon")
