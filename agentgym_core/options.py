"""A component's options, declared once: in its ``Config`` dataclass (STYLE.md, convention 12).

The dataclass holds each option's default and, in ``__post_init__``, its checks; ``__init__``
takes ``**options`` and builds it with :func:`config_from`, then reads ``self.config``. A run
config's section, ``--options`` and a direct ``MyEnv(size=5)`` so take the same options, with the
same defaults and the same messages. :func:`agentgym_core.testing.check_component_options`
asserts the rule for a component class. The checks a config file's section gets (unknown keys,
types, the dataclass's own checks) live here too, so that a component's options given from code
(:func:`check_options`) fail as its config section does.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from .errors import ConfigError, UnknownOptionError, did_you_mean


def refuse_unknown_options(what: str, config_cls: type, options: Iterable[str]) -> None:
    """Raise :class:`UnknownOptionError` naming the first of *options* that is not a field of
    *config_cls*, with a "did you mean" and the valid options. *what* names the component."""
    fields = {f.name for f in dataclasses.fields(config_cls)}
    for key in options:
        if key not in fields:
            valid = f"Valid options: {', '.join(sorted(fields))}" if fields else "It takes no options"
            raise UnknownOptionError(f"{what}: unknown option {key!r}.{did_you_mean(str(key), fields)} {valid}")


def config_from(component: Any, options: dict[str, Any], config: Any = None) -> Any:
    """*component*'s ``Config`` built from its keyword *options* (``__init__``'s ``**options``).

    An unknown option fails naming it and the known ones; the dataclass's own checks run as it
    is built. A ready *config* (an instance of that ``Config``) is taken as it is, with *options*
    replacing some of its fields.
    """
    cls = component if isinstance(component, type) else type(component)
    config_cls = cls.Config
    refuse_unknown_options(cls.__name__, config_cls, options)
    if config is None:
        return config_cls(**options)
    if not isinstance(config, config_cls):
        raise TypeError(f"{cls.__name__}: config must be a {config_cls.__name__}, got {type(config).__name__}")
    return dataclasses.replace(config, **options)


def check_section(path: str, cls: type, section: DictConfig) -> dict:
    """Validate config *section* (at key *path*) against dataclass *cls*; return the filled plain dict."""
    _unknown_keys(path, cls, section)
    try:
        merged = OmegaConf.merge(OmegaConf.structured(cls), section)
        obj = OmegaConf.to_object(merged)  # runs __post_init__ checks
    except OmegaConfBaseException as exc:
        key = getattr(exc, "full_key", None) or ""
        msg = str(exc).splitlines()[0]
        where = f"{path}.{key}" if key else path
        raise ConfigError(f"config key '{where}': {msg}") from None
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"config section '{path}': {exc}") from None
    return dataclasses.asdict(obj) if dataclasses.is_dataclass(obj) else dict(obj)


def refuse_colon_keys(path: str, section: DictConfig) -> None:
    """``{name:success}`` (no space after the colon) is the one key ``name:success`` in YAML."""
    for key, value in OmegaConf.to_container(section, resolve=False).items():
        key = str(key)
        if ":" in key and value is None:
            name, _, given = key.partition(":")
            raise ConfigError(
                f"config key '{path}' has the key {key!r}: write '{name}: {given}' with a space after "
                f"the colon (without it YAML reads one key, '{key}')"
            )


def _unknown_keys(path: str, cls: type, section: Any) -> None:
    if not dataclasses.is_dataclass(cls) or not isinstance(section, DictConfig):
        return
    refuse_colon_keys(path, section)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in section:
        if key not in fields:
            raise ConfigError(
                f"unknown config key '{path}.{key}'.{did_you_mean(str(key), fields)} "
                f"Valid keys under {path}: {', '.join(sorted(fields))}"
            )
        sub = fields[key]
        sub_type = sub.type
        default = sub.default_factory() if sub.default_factory is not dataclasses.MISSING else sub.default  # type: ignore[misc]
        if dataclasses.is_dataclass(default):
            _unknown_keys(f"{path}.{key}", type(default), section[key])
        elif isinstance(sub_type, type) and dataclasses.is_dataclass(sub_type):
            _unknown_keys(f"{path}.{key}", sub_type, section[key])


def check_options(what: str, cls: type | None, options: dict[str, Any]) -> None:
    """Check a component's keyword *options* (``--options``, code) as a config section is.

    Unknown keys fail with a "did you mean" and the valid ones; wrong types and the config
    dataclass's own checks fail naming the option. *what* names the component in messages
    (``"env 'babyai'"``). Values a config file cannot hold (objects passed from code) are left
    to the component.
    """
    if cls is None or not dataclasses.is_dataclass(cls):
        return
    refuse_unknown_options(what, cls, options)
    try:
        section = OmegaConf.create(dict(options))
    except OmegaConfBaseException:
        return
    try:
        check_section("options", cls, section)
    except ConfigError as exc:
        msg = str(exc).replace("config key 'options.", "option '").replace("config section 'options'", "options")
        raise ConfigError(f"{what}: {msg}") from None
