"""A component's options, declared once: in its ``Config`` dataclass (STYLE.md, convention 12).

The dataclass holds each option's default and, in ``__post_init__``, its checks; ``__init__``
takes ``**options`` and builds it with :func:`config_from`, then reads ``self.config``. A run
config's section, ``--options`` and a direct ``MyEnv(size=5)`` so take the same options, with the
same defaults and the same messages. :func:`agentgym_core.testing.check_component_options`
asserts the rule for a component class.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from .errors import UnknownOptionError, did_you_mean


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
