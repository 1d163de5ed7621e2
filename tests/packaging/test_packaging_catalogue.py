"""Core's catalogue of AgentGym's distributions agrees with the pyprojects, the registries and the README:
each distribution's folder and AgentGym requirements, the umbrella's dependencies and extras, the names
each plugin registers, and the README's table of distributions."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from agentgym_core import catalogue
from agentgym_core.kinds import KINDS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - 3.10
    tomllib = pytest.importorskip("tomli")

REPO = Path(__file__).resolve().parents[2]


def _pyprojects() -> dict[str, tuple[Path, dict]]:
    found = {}
    for path in [REPO / "pyproject.toml", *sorted(REPO.glob("plugins/*/*/pyproject.toml"))]:
        project = tomllib.loads(path.read_text())["project"]
        found[project["name"]] = (path.parent, project)
    return found


def _agentgym(requirements: list[str]) -> list[str]:
    return [re.split(r"[\[<>=;! ]", r, maxsplit=1)[0] for r in requirements if r.startswith("agentgym")]


def test_every_distribution_is_in_the_catalogue_with_its_folder_and_requirements():
    projects = _pyprojects()
    assert set(projects) == set(catalogue.BY_NAME)
    for name, (folder, project) in projects.items():
        entry = catalogue.BY_NAME[name]
        assert (REPO / entry.folder).resolve() == folder.resolve(), name
        assert sorted(_agentgym(project.get("dependencies", []))) == sorted(entry.requires), name


def test_the_umbrellas_extras_and_dependencies_are_the_catalogues():
    _, project = _pyprojects()[catalogue.UMBRELLA]
    extras = {k: sorted(_agentgym(v)) for k, v in project["optional-dependencies"].items()}
    assert extras == {k: sorted(v) for k, v in catalogue.extras().items()}


def test_each_plugin_registers_what_the_catalogue_says():
    from agentgym_core.plugins import get_plugin_manager

    manager = get_plugin_manager(fresh=True)
    registered: dict[str, dict[str, set[str]]] = {}
    for info in manager.plugins.values():
        for kind, names in info.registered.items():
            registered.setdefault(info.distribution, {}).setdefault(kind, set()).update(names)
    core_commands = registered.get("agentgym-core", {}).pop("commands", None)
    assert core_commands  # core's own commands are not plugins to install
    for dist, kinds in registered.items():
        if dist not in catalogue.BY_NAME:
            continue  # a third-party plugin installed here
        # the registry kinds this core has (loggers are lifecycle-hook plugins, not a registry)
        want = {k: set(v) for k, v in catalogue.BY_NAME[dist].provides.items() if k in KINDS}
        assert {k: v for k, v in kinds.items() if v} == want, dist


def test_the_readme_lists_every_distribution_with_its_folder():
    readme = (REPO / "README.md").read_text()
    for d in catalogue.DISTRIBUTIONS:
        row = re.search(rf"^\| `{re.escape(d.name)}` \| `{re.escape(d.folder)}` \|(.*)$", readme, re.M)
        assert row, f"README.md has no row '| `{d.name}` | `{d.folder}` | ...' in its table of distributions"
        for dep in d.requires:
            if dep != "agentgym-core":
                assert f"`{dep}`" in row.group(1), (d.name, dep)


def test_the_umbrella_readme_table_lists_every_env_class():
    readme = (REPO / "plugins" / "umbrella" / "agentgym" / "README.md").read_text()
    for d in catalogue.DISTRIBUTIONS:
        for cls, env in d.env_classes.items():
            assert re.search(rf"^\| `{cls}` \| `{d.extra}` \| `{env}`", readme, re.M), (cls, d.extra, env)


def test_the_readme_wheel_example_builds_what_the_minimal_config_needs():
    """README's `pip wheel` line names the folders of the distributions configs/minimal.yaml runs on (its
    components' providers and what they require), no more: it used to build all of them."""
    import re

    import yaml

    line = re.search(r"^pip wheel --no-deps -w dist (.+)$", (REPO / "README.md").read_text(), flags=re.M).group(1)
    cfg = yaml.safe_load((REPO / "configs" / "minimal.yaml").read_text())
    named = {("envs", cfg["env"]["name"]), ("engines", "hf"), ("trainers", cfg["trainer"]["name"]),
             ("schedulers", cfg["scheduler"]["name"]), *(("rewards", r["name"]) for r in cfg["rewards"])}
    needed, todo = set(), [catalogue.provider_of(kind, name).name for kind, name in named]
    while todo:
        name = todo.pop()
        if name not in needed:
            needed.add(name)
            todo += list(catalogue.BY_NAME[name].requires)
    assert sorted(line.split()) == sorted(catalogue.BY_NAME[n].folder for n in needed)
