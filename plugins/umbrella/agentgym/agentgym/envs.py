"""Env classes by name, as the seed project imports them: ``from agentgym.envs import BabyAIEnv``.

Lazy: importing this module imports nothing. Asking for a name looks through the registered
envs' import strings (``"pkg.module:Class"``) for that class name and imports only that env's
module, so ``from agentgym.envs import TextCraftEnv`` loads neither torch nor any other env.
Any installed env plugin's class is found this way, not only the bundled ones. An env whose
plugin is not installed is a one-line :class:`EnvNotInstalledError` naming the extra to
install.
"""
from __future__ import annotations

from typing import Any

from agentgym_core.catalogue import DISTRIBUTIONS, UMBRELLA, env_class
from agentgym_core import AgentGymError

#: The env classes of AgentGym's own env plugins (core's catalogue): only used to say what to
#: install; the classes themselves come from the registry.
BUNDLED = sorted(cls for d in DISTRIBUTIONS for cls in d.env_classes)


class EnvNotInstalledError(AgentGymError, ImportError):
    """No installed plugin registers an env class of that name (an ImportError, so that
    ``from agentgym.envs import X`` shows this message rather than Python's generic one)."""


def class_name(target: str) -> str:
    """``"pkg.module:Outer.Class"`` -> ``"Class"`` (the name ``agentgym.envs`` offers it under)."""
    return target.rpartition(":")[2].rpartition(".")[2]


def _registered() -> dict[str, list[Any]]:
    """Class name -> the registry entries (usually one) whose import string ends in it."""
    from agentgym_core import get_plugin_manager

    found: dict[str, list[Any]] = {}
    for entry in get_plugin_manager().registry("envs").entries():
        found.setdefault(class_name(entry.target), []).append(entry)
    return found


def _missing(name: str, registered: dict[str, list[Any]]) -> EnvNotInstalledError:
    """What to say about a class name no installed plugin registers."""
    from importlib import metadata

    from agentgym_core.catalogue import install_hint
    from agentgym_core import did_you_mean

    known = env_class(name)
    if known is None:
        names = sorted(set(registered) | set(BUNDLED))
        return EnvNotInstalledError(
            f"agentgym.envs has no env class {name!r}.{did_you_mean(name, names)} Installed env classes: "
            f"{', '.join(sorted(registered)) or 'none'}; bundled env plugins: {', '.join(BUNDLED)}")
    env, dist = known
    what = f"{name} is the {env!r} env of {dist.name!r} (extra {UMBRELLA}[{dist.extra}])"
    try:
        metadata.version(dist.name)
    except metadata.PackageNotFoundError:
        return EnvNotInstalledError(f"{what}, which is not installed: {install_hint(dist.name)}")
    return EnvNotInstalledError(
        f"{what}, which is installed but did not register it (switched off by AGENTGYM_DISABLE_PLUGINS or "
        "AGENTGYM_LOAD_PLUGINS? `agentgym plugins` shows what is loaded)")


def __getattr__(name: str) -> Any:
    if name.startswith("_"):
        raise AttributeError(f"module 'agentgym.envs' has no attribute {name!r}")
    registered = _registered()
    entries = registered.get(name, [])
    if not entries:
        raise _missing(name, registered)
    if len(entries) > 1:
        raise EnvNotInstalledError(
            f"several installed envs are classes named {name}: "
            + ", ".join(f"{e.name!r} ({e.target}, distribution {e.distribution!r})" for e in entries)
            + "; import the one you mean from its module, or pass its registered name to LLMAgent")
    cls = entries[0].load()
    globals()[name] = cls  # found once per process
    return cls


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_registered()))
