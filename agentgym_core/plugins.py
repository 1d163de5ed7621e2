"""The plugin manager: finds ``agentgym`` entry points, loads them, fills the registries.

Discovery is visible (``agentgym plugins``) and switchable:

* ``AGENTGYM_LOAD_PLUGINS=a,b`` loads only those entry points (empty string: none);
* ``AGENTGYM_DISABLE_PLUGINS=a,b`` skips those.

A name in either that no installed plugin has is a warning (a misspelling would otherwise
silently load nothing, or leave a broken plugin loaded).

Core's own defaults (``fixed`` scheduler, ``success`` reward, ``cpu`` backend) are the
internal plugin ``core`` and go through the same hooks; the switches do not affect it.
"""
from __future__ import annotations

import importlib
import logging
import os
from dataclasses import dataclass, field
from importlib import metadata
from types import ModuleType
from typing import Any

import pluggy

from . import hookspecs
from .errors import PluginLoadError
from .kinds import KINDS, REGISTRATION_HOOKS
from .registry import Registry

ENTRY_POINT_GROUP = "agentgym"
INTERNAL_PLUGINS = ("agentgym_core.defaults.plugin",)


@dataclass
class PluginInfo:
    """What ``agentgym plugins`` shows for one plugin."""

    name: str
    module: str
    distribution: str | None
    version: str | None
    internal: bool = False
    registered: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "module": self.module,
            "distribution": self.distribution,
            "version": self.version,
            "internal": self.internal,
            "registered": {k: v for k, v in self.registered.items() if v},
        }


def _env_list(var: str) -> list[str] | None:
    value = os.environ.get(var)
    if value is None:
        return None
    return [item.strip() for item in value.split(",") if item.strip()]


class PluginManager:
    """Wraps a :class:`pluggy.PluginManager` with AgentGym's registries and plugin info."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.plugins: dict[str, PluginInfo] = {}
        self.registries: dict[str, Registry] = {kind: Registry(kind) for kind in KINDS}
        #: Installed plugins the env-var switches left out: entry point name -> (distribution, the switch).
        self.switched_off: dict[str, tuple[str | None, str]] = {}
        self._filled = False

    # -- loading ---------------------------------------------------------------------------
    def register(
        self,
        plugin: ModuleType | object,
        name: str,
        *,
        distribution: str | None = None,
        version: str | None = None,
        internal: bool = False,
    ) -> None:
        """Add a hooks module or object; its registration hooks run at the next lookup."""
        if name in self.plugins:
            raise PluginLoadError(
                f"two plugins are named {name!r} ({self.plugins[name].module} and "
                f"{getattr(plugin, '__name__', type(plugin).__name__)}); rename one entry point"
            )
        try:
            self.pm.register(plugin, name=name)
            self.pm.check_pending()
        except pluggy.PluginValidationError as exc:
            self.pm.unregister(name=name) if self.pm.has_plugin(name) else None
            raise PluginLoadError(_invalid_hook_message(name, distribution, exc)) from exc
        self.plugins[name] = PluginInfo(
            name=name,
            module=getattr(plugin, "__name__", type(plugin).__name__),
            distribution=distribution,
            version=version,
            internal=internal,
        )
        if self._filled:
            self._register_components(name)

    def unregister(self, name: str) -> None:
        """Remove plugin *name* and everything it registered."""
        if name not in self.plugins:
            return
        self.pm.unregister(name=name)
        del self.plugins[name]
        for registry in self.registries.values():
            for entry_name in [e.name for e in registry.entries() if e.plugin == name]:
                del registry._entries[entry_name]

    def load_internal(self) -> None:
        for module_name in INTERNAL_PLUGINS:
            module = importlib.import_module(module_name)
            self.register(module, "core", distribution="agentgym-core", version=_version("agentgym-core"), internal=True)

    def load_entrypoints(self) -> None:
        """Import every ``agentgym`` entry point allowed by the env-var switches."""
        allow = _env_list("AGENTGYM_LOAD_PLUGINS")
        block = set(_env_list("AGENTGYM_DISABLE_PLUGINS") or [])
        seen: set[str] = set()
        for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            if ep.name in seen:  # the same distribution visible twice on sys.path
                continue
            seen.add(ep.name)
            dist = ep.dist.name if ep.dist is not None else None
            if ep.name in block or (allow is not None and ep.name not in allow):
                var = "AGENTGYM_DISABLE_PLUGINS" if ep.name in block else "AGENTGYM_LOAD_PLUGINS"
                self.switched_off[ep.name] = (dist, f"{var}={os.environ.get(var, '')!r}")
                continue
            version = ep.dist.version if ep.dist is not None else None
            try:
                module = ep.load()
            except Exception as exc:
                raise PluginLoadError(
                    f"plugin {ep.name!r}{_dist(dist)} failed to import ({ep.value}): "
                    f"{type(exc).__name__}: {exc}. Fix or uninstall it, or skip it with "
                    f"AGENTGYM_DISABLE_PLUGINS={ep.name}"
                ) from exc
            self.register(module, ep.name, distribution=dist, version=version)
        for var, names in (("AGENTGYM_LOAD_PLUGINS", allow or []), ("AGENTGYM_DISABLE_PLUGINS", sorted(block))):
            _warn_unknown(var, [n for n in names if n not in seen], seen)

    # -- registries ------------------------------------------------------------------------
    def _register_components(self, only: str | None = None) -> None:
        for kind, hook_name in REGISTRATION_HOOKS.items():
            registry = self.registries[kind]
            for impl in getattr(self.pm.hook, hook_name).get_hookimpls():
                if only is not None and impl.plugin_name != only:
                    continue
                info = self.plugins[impl.plugin_name]
                registry._bind(info.name, info.distribution)
                kwargs = {"registry": registry}
                try:
                    impl.function(*[kwargs[arg] for arg in impl.argnames])
                except PluginLoadError:
                    raise
                except Exception as exc:
                    from .errors import AgentGymError

                    if isinstance(exc, AgentGymError):
                        raise
                    raise PluginLoadError(
                        f"plugin {info.name!r}{_dist(info.distribution)} raised in {hook_name}: "
                        f"{type(exc).__name__}: {exc}. Skip it with AGENTGYM_DISABLE_PLUGINS={info.name}"
                    ) from exc
                finally:
                    registry._bind("<direct>", None)
                info.registered.setdefault(kind, [])
                info.registered[kind] = sorted(
                    e.name for e in registry.entries() if e.plugin == info.name
                )
        self._filled = True

    def registry(self, kind: str) -> Registry:
        """The registry of *kind* ("envs", "rewards", ...), filled on first use."""
        if not self._filled:
            self._register_components()
        return self.registries[kind]

    @property
    def hook(self) -> Any:
        """Call lifecycle hooks: ``manager.hook.on_step_end(step=..., metrics=..., run_dir=...)``."""
        return self.pm.hook


def _invalid_hook_message(name: str, distribution: str | None, exc: Exception) -> str:
    """What a plugin with a misspelt hook (or wrong hook arguments) sees, with the fix."""
    import re

    from .errors import did_you_mean

    text = str(exc)
    unknown = re.search(r"unknown hook '(\w+)'", text)
    if unknown:
        specs = [n for n in dir(hookspecs) if n.startswith(("register_", "on_"))]
        problem = f"defines unknown hook {unknown.group(1)!r}.{did_you_mean(unknown.group(1), specs)}"
    else:
        problem = f"defines an invalid hook: {' '.join(text.split())}."
    return (f"plugin {name!r}{_dist(distribution)} {problem} The hooks are listed in docs/plugin_hooks.md; "
            f"until it is fixed, skip the plugin with AGENTGYM_DISABLE_PLUGINS={name}")


def _dist(distribution: str | None) -> str:
    return f" (distribution {distribution!r})" if distribution else ""


def _warn_unknown(var: str, unknown: list[str], installed: set[str]) -> None:
    """Say which names in switch *var* no installed plugin has (the switch ignores them)."""
    from .errors import did_you_mean

    for name in unknown:
        logging.getLogger("agentgym.plugins").warning(
            "%s names %r, but no installed plugin is called that, so it is ignored.%s Installed plugins: %s "
            "(`agentgym plugins` lists them).", var, name, did_you_mean(name, installed),
            ", ".join(sorted(installed)) or "none")


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


_MANAGER: PluginManager | None = None


def get_plugin_manager(*, entrypoints: bool = True, fresh: bool = False) -> PluginManager:
    """The process-wide plugin manager (built on first call).

    :param entrypoints: also load installed plugins (``False``: only core's defaults).
    :param fresh: build a new manager instead of returning the cached one.
    """
    global _MANAGER
    if _MANAGER is not None and not fresh and entrypoints:
        return _MANAGER
    manager = PluginManager()
    manager.load_internal()
    if entrypoints:
        manager.load_entrypoints()
    manager.registry("envs")  # run registration hooks now: errors surface at start-up
    if entrypoints and not fresh:
        _MANAGER = manager
    return manager


def reset_plugin_manager() -> None:
    """Forget the cached manager (tests, or after installing a plugin in-process)."""
    global _MANAGER
    _MANAGER = None
