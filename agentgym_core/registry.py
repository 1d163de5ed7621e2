"""Typed registries: plugins register *import strings*, components are imported on use.

A registry is what a ``register_<kind>`` hook receives. Registering costs nothing (no
import happens), so ``agentgym plugins`` stays fast however heavy a plugin is.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from .errors import ComponentImportError, DuplicateNameError, UnknownNameError, did_you_mean
from .kinds import KINDS, SINGULAR


def provider_hint(noun: str, name: str, provider: str) -> str:
    """How to get component *name* (a *noun*: "env", "command", ...) of AgentGym's distribution
    *provider*: install it (a command that works here), or stop switching it off."""
    import os
    from importlib import metadata

    from .catalogue import install_hint

    try:
        metadata.version(provider)
    except metadata.PackageNotFoundError:
        return (f"{noun.capitalize()} {name!r} is provided by the distribution {provider!r}, which is not installed: "
                f"{install_hint(provider)}.")
    switches = [f"{var}={os.environ[var]!r}" for var in ("AGENTGYM_DISABLE_PLUGINS", "AGENTGYM_LOAD_PLUGINS")
                if var in os.environ]
    if switches:
        return (f"{noun.capitalize()} {name!r} is provided by {provider!r}, which is installed but not loaded "
                f"because of {' and '.join(switches)}: change that setting.")
    return (f"{noun.capitalize()} {name!r} is provided by {provider!r}, which is installed but not loaded "
            "(did its plugin fail to import? see `agentgym plugins`).")


def import_string(target: str) -> Any:
    """Import ``"pkg.module:Attr"`` (or ``"pkg.module.Attr"``) and return the attribute."""
    if ":" in target:
        module_name, _, attr = target.partition(":")
    else:
        module_name, _, attr = target.rpartition(".")
    if not module_name or not attr:
        raise ComponentImportError(
            f"import string {target!r} is malformed; expected 'package.module:Name'"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ComponentImportError(
            f"cannot import module {module_name!r} for {target!r}: {exc}. "
            "Is the plugin's distribution (and its dependencies) installed?"
        ) from exc
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ComponentImportError(
                f"module {module_name!r} has no attribute {attr!r} (from import string {target!r})"
            ) from None
    return obj


def config_from_signature(component: Any, name: str) -> type | None:
    """A dataclass of the keyword parameters (with defaults) of *component*'s ``__init__``.

    Lets a component without a ``Config`` still have its config keys checked. Parameters
    without a default, ``*args`` and ``**kwargs`` are not config keys.
    """
    import dataclasses
    import inspect
    from typing import Any as _Any

    target = component.__init__ if isinstance(component, type) else component
    try:
        params = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):
        return None
    fields = []
    for p in params:
        if p.name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.default is p.empty:
            continue
        default = p.default
        if isinstance(default, (list, dict, set)):
            fields.append((p.name, _Any, dataclasses.field(default_factory=lambda d=default: type(d)(d))))
        else:
            ftype = type(default) if isinstance(default, (bool, int, float, str)) else _Any
            fields.append((p.name, ftype, dataclasses.field(default=default)))
    return dataclasses.make_dataclass(name, fields)


@dataclass
class Entry:
    """One registered component: where it lives and who registered it."""

    kind: str
    name: str
    target: str
    plugin: str
    distribution: str | None = None
    config: str | None = None
    description: str = ""
    _loaded: Any = field(default=None, repr=False, compare=False)

    def load(self) -> Any:
        """Import and return the component (class or factory)."""
        if self._loaded is None:
            self._loaded = import_string(self.target)
        return self._loaded

    def config_class(self) -> type | None:
        """The component's config dataclass: the registered one, else ``Component.Config``,
        else one derived from the keyword parameters of its ``__init__``."""
        if self.config:
            return import_string(self.config)
        component = self.load()
        declared = getattr(component, "Config", None)
        if declared is not None:
            return declared
        return config_from_signature(component, f"{self.name}_config")

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "target": self.target,
            "plugin": self.plugin,
            "distribution": self.distribution,
            "description": self.description,
        }


class Registry:
    """Names of one kind (envs, rewards, ...) mapped to import strings.

    Plugins call :meth:`add`; the framework calls :meth:`get` / :meth:`build`.
    """

    def __init__(self, kind: str):
        if kind not in KINDS:
            raise ValueError(f"unknown registry kind {kind!r}; expected one of {KINDS}")
        self.kind = kind
        self._entries: dict[str, Entry] = {}
        self._plugin: str = "<direct>"
        self._distribution: str | None = None

    # -- registration (what plugins use) ---------------------------------------------------
    def add(
        self,
        name: str,
        target: str,
        *,
        config: str | None = None,
        description: str = "",
    ) -> None:
        """Register *name* as the component at import string *target*.

        :param name: the name users write in configs (``env.name: babyai``).
        :param target: ``"package.module:Class"``; imported only when the component is built.
        :param config: optional ``"package.module:ConfigDataclass"``; defaults to the
            component's ``Config`` attribute.
        :param description: one line shown by ``agentgym list``.
        """
        if not isinstance(name, str) or not name or not name.replace("-", "_").replace(".", "_").isidentifier():
            raise ValueError(
                f"plugin {self._plugin!r} registered an invalid {SINGULAR[self.kind]} name {name!r}; "
                "use letters, digits, '_', '-' or '.'"
            )
        if self.kind == "experts" and not all(name.partition(".")[::2]):
            raise ValueError(
                f"plugin {self._plugin!r} registered the expert {name!r}; an expert's name is '<env>.<name>' "
                "(e.g. 'babyai.oracle'), the env it plays first"
            )
        if not isinstance(target, str):
            raise TypeError(
                f"plugin {self._plugin!r} registered {SINGULAR[self.kind]} {name!r} with "
                f"{type(target).__name__}; register an import string like 'pkg.module:Class'"
            )
        if name in self._entries:
            other = self._entries[name]
            raise DuplicateNameError(
                f"{SINGULAR[self.kind]} {name!r} is registered twice: by plugin {other.plugin!r}"
                f"{_dist(other.distribution)} and by plugin {self._plugin!r}{_dist(self._distribution)}. "
                f"Uninstall one of them or disable one with AGENTGYM_DISABLE_PLUGINS={self._plugin}"
            )
        self._entries[name] = Entry(
            kind=self.kind,
            name=name,
            target=target,
            plugin=self._plugin,
            distribution=self._distribution,
            config=config,
            description=description,
        )

    def _bind(self, plugin: str, distribution: str | None) -> None:
        self._plugin, self._distribution = plugin, distribution

    # -- lookup (what the framework uses) --------------------------------------------------
    def names(self) -> list[str]:
        return sorted(self._entries)

    def entries(self) -> list[Entry]:
        return [self._entries[n] for n in self.names()]

    def in_order(self) -> list[Entry]:
        """Entries in the order they were registered (core's first, then plugins by name)."""
        return list(self._entries.values())

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, name: str) -> Entry:
        """The entry for *name*, or an :class:`UnknownNameError` that helps the user."""
        try:
            return self._entries[name]
        except KeyError:
            pass
        noun = SINGULAR[self.kind]
        installed = ", ".join(self.names()) or "none"
        msg = f"unknown {noun} {name!r}.{did_you_mean(str(name), self._entries)} Installed {self.kind}: {installed}."
        from .catalogue import provider_of

        known = provider_of(self.kind, str(name))
        provider = known.name if known is not None else None
        if ":" in str(name):
            article = "an" if noun[0] in "aeiou" else "a"
            msg += (f" An import string names {article} {noun} only for `agentgym env serve/play`; to use it in a run "
                    "config, register it with an entry point (README, 'Write a plugin') and give its name.")
        elif provider:
            msg += " " + provider_hint(noun, name, provider)
        else:
            msg += " The plugin that provides it may not be installed (see `agentgym plugins`)."
        raise UnknownNameError(msg)

    def load(self, name: str) -> Any:
        """Import and return the component registered as *name*."""
        return self.get(name).load()

    def build(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Import the component registered as *name* and call it with the arguments."""
        return self.load(name)(*args, **kwargs)


def _dist(distribution: str | None) -> str:
    return f" (distribution {distribution!r})" if distribution else ""
