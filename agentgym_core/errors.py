"""Errors a user can hit. Each message names the thing, the place and the fix.

The CLI prints any :class:`AgentGymError` as one line without a traceback (``--debug``
shows it); everything else is a bug and keeps its traceback.
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable


class AgentGymError(Exception):
    """Base class of errors caused by the user's setup, config or input."""


class PluginLoadError(AgentGymError):
    """A plugin's module failed to import or its hook raised."""


class DuplicateNameError(AgentGymError):
    """Two plugins registered the same name for the same kind."""


class UnknownNameError(AgentGymError, KeyError):
    """A name was asked for that no installed plugin registered."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class ConfigError(AgentGymError):
    """The run config is malformed: wrong key, wrong type, bad value."""


class UnknownOptionError(ConfigError, TypeError):
    """A component was given an option its ``Config`` does not declare (a ``TypeError`` too, as
    Python's own unknown-keyword error is)."""


class ComponentImportError(AgentGymError):
    """A registered component's import string does not resolve."""


def close_matches(word: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """Names in *choices* that look like *word* (for "did you mean ..."): the same name in another case first
    (``BabyAI`` finds ``babyai``), then close spellings; case is ignored only when nothing is close as written."""
    choices = list(choices)
    same = [c for c in choices if c.lower() == word.lower() and c != word]
    near = difflib.get_close_matches(word, choices, n=n, cutoff=0.6)
    if not near and not same:
        by_lower: dict[str, str] = {}
        for c in choices:
            by_lower.setdefault(c.lower(), c)
        near = [by_lower[m] for m in difflib.get_close_matches(word.lower(), list(by_lower), n=n, cutoff=0.6)]
    return list(dict.fromkeys(same + near))[:n]


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` Did you mean 'x'?`` or an empty string."""
    matches = close_matches(word, choices)
    if not matches:
        return ""
    return " Did you mean " + " or ".join(repr(m) for m in matches) + "?"
