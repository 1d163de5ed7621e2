"""Compose a run config: YAML files + dotlist overrides, validated against dataclasses.

    cfg = load_config(["configs/quickstart.yaml"], ["trainer.lr=1e-6", "scheduler.rounds=[6,13,20]"])

Every section is checked before anything starts: an unknown key names its full path and
the closest valid key; a wrong type or bad value names the key and what is expected; an
unknown component name lists what is installed. A pipeline's ``stages`` are checked here too: each
stage's config is the file's with the stage's sections on top (:func:`stage_config`), and runs in
:mod:`agentgym_core.pipeline`.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from .errors import AgentGymError, ConfigError, UnknownNameError, did_you_mean
from .options import check_section, refuse_colon_keys
from .kinds import SINGULAR
from .config_schema import DEFAULT_REWARDS, REDACTED, SECRET_KEYS, SECTIONS, STAGES, SectionSpec


def load_config(
    files: str | Path | Sequence[str | Path] | None = None,
    overrides: Iterable[str] = (),
    manager: Any = None,
) -> DictConfig:
    """Merge *files* (in order) then *overrides* and validate. Returns a read-only DictConfig."""
    raw = compose_raw(files, overrides)
    return validate(raw, manager)


def compose_raw(files: str | Path | Sequence[str | Path] | None, overrides: Iterable[str] = ()) -> DictConfig:
    """Merge YAML files and dotlist overrides without validating."""
    if files is None:
        files = []
    elif isinstance(files, (str, Path)):
        files = [files]
    merged = OmegaConf.create({})
    for f in files:
        path = Path(f)
        if not path.is_file():
            raise ConfigError(f"config file {str(path)!r} does not exist")
        try:
            loaded = OmegaConf.load(path)
        except Exception as exc:
            raise ConfigError(f"config file {str(path)!r} is not valid YAML: {exc}") from exc
        if not isinstance(loaded, DictConfig):
            raise ConfigError(f"config file {str(path)!r} must hold a mapping of sections, not a list")
        try:
            merged = OmegaConf.merge(merged, loaded)
        except (OmegaConfBaseException, TypeError, ValueError) as exc:
            raise ConfigError(
                f"config file {str(path)!r} cannot be merged onto the files before it: {str(exc).splitlines()[0]} "
                "(a list must be given whole, not item by item)"
            ) from exc
    overrides = list(overrides)
    for item in (o for o in overrides if o.startswith("~")):  # ~key: remove what the files set
        merged = _remove_key(merged, item[1:].strip())
    overrides = [_shorthand_override(item) for item in overrides if not item.startswith("~")]
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"override {item!r} must look like key.path=value (e.g. trainer.lr=1e-6), or "
                              "~key.path to remove a key the config files set")
        _no_list_item(item, merged)
    try:
        dot = OmegaConf.from_dotlist(overrides)
    except OmegaConfBaseException as exc:
        raise ConfigError(f"cannot parse overrides {overrides}: {exc}") from exc
    # A shorthand section given as a scalar (``backend: cpu``) becomes {name: cpu} before merging.
    merged = _normalise_shorthands(merged)
    dot = _normalise_shorthands(dot)
    try:
        return OmegaConf.merge(merged, dot)
    except (OmegaConfBaseException, TypeError, ValueError) as exc:
        raise ConfigError(f"cannot apply overrides {overrides}: {str(exc).splitlines()[0]}") from exc


_INDEX = re.compile(r"\[(\d+)\]")


def _remove_key(merged: DictConfig, key: str) -> DictConfig:
    """``~scheduler.rounds``: *merged* without that key (a section's defaults or the default component apply
    again), so a shipped config can be reused when a plugin it names is not installed."""
    parent, _, last = key.rpartition(".")
    try:
        node = OmegaConf.select(merged, parent) if parent else merged
    except OmegaConfBaseException:
        node = None
    if not isinstance(node, DictConfig) or last not in node:
        near = did_you_mean(last, list(node) if isinstance(node, DictConfig) else [])
        raise ConfigError(f"override '~{key}': the config has no key {key!r} to remove.{near}")
    data = OmegaConf.to_container(merged, resolve=False)
    target = data
    for part in parent.split(".") if parent else []:
        target = target[part]
    del target[last]
    return OmegaConf.create(data)


def _shorthand_override(item: str) -> str:
    """``agent.strategy=reflect`` -> ``agent.strategy.name=reflect`` (likewise ``scheduler=fixed``), so that
    options given next to it (``agent.strategy.attempts=2``) do not silently replace the name."""
    key, sep, value = item.partition("=")
    shorthands = {k for k, s in SECTIONS.items() if s.kind and not s.is_list}
    shorthands |= {f"{k}.{n}" for k, s in SECTIONS.items() for n in s.nested}
    if sep and key.strip() in shorthands and value.strip() and value.strip()[0] not in "{[" and value.strip() != "null":
        return f"{key.strip()}.name={value}"
    return item


def _no_list_item(item: str, merged: DictConfig) -> None:
    """Refuse an override of one list item (``rewards.1.weight=0.5``): OmegaConf cannot merge
    it into the list, and a whole-list override says the same thing unambiguously."""
    key, value = item.split("=", 1)
    parts = _INDEX.sub(r".\1", key).split(".")
    index = next((i for i, part in enumerate(parts) if part.isdigit()), None)
    if index is None:
        return
    where = ".".join(parts[:index])
    try:
        current = OmegaConf.select(merged, where) if where else None
    except OmegaConfBaseException:
        current = None
    if isinstance(current, ListConfig):
        data = OmegaConf.to_container(current, resolve=False)
    elif where in SECTIONS and SECTIONS[where].is_list:
        data = [dict(r) for r in DEFAULT_REWARDS]
    else:
        data = None
    example = "[...]"
    if isinstance(data, list):
        try:  # the current list with this change applied, ready to paste
            edited = OmegaConf.create({"x": data})
            new = OmegaConf.from_dotlist([f"v={value}"]).v
            OmegaConf.update(edited, ".".join(["x", *parts[index:]]), new, merge=False)
            example = _flow(OmegaConf.to_container(edited, resolve=False)["x"])
        except (OmegaConfBaseException, TypeError, ValueError, IndexError, KeyError):
            example = _flow(data)
    quote = '"' if "'" in example else "'"
    raise ConfigError(
        f"override {item!r} changes one item of the list '{where}': lists cannot be changed item by "
        f"item from the command line; give the whole list, quoted for the shell: {quote}{where}={example}{quote}"
    )


def _flow(data: Any) -> str:
    """*data* as one line of YAML flow style, which an override accepts back."""
    return yaml.safe_dump(data, default_flow_style=True, width=10**9, sort_keys=False).strip()


def _normalise_shorthands(cfg: DictConfig) -> DictConfig:
    data = OmegaConf.to_container(cfg, resolve=False)
    assert isinstance(data, dict)
    for key, spec in SECTIONS.items():
        value = data.get(key)
        if spec.kind and not spec.is_list and isinstance(value, str):
            data[key] = {"name": value}
        if spec.is_list and isinstance(value, list):
            data[key] = [{"name": v} if isinstance(v, str) else v for v in value]
        for sub in spec.nested:  # agent.strategy: reflect
            if isinstance(value, dict) and isinstance(value.get(sub), str):
                value[sub] = {"name": value[sub]}
    return OmegaConf.create(data)


def validate(raw: DictConfig, manager: Any = None) -> DictConfig:
    """Check every section of *raw* and fill defaults. Raises :class:`ConfigError`."""
    if manager is None:
        from .plugins import get_plugin_manager

        manager = get_plugin_manager()
    for key in raw:
        if key not in SECTIONS and key != STAGES:
            raise ConfigError(
                f"unknown config section {key!r}.{did_you_mean(str(key), [*SECTIONS, STAGES])} "
                f"Valid sections: {', '.join(SECTIONS)}, {STAGES}"
            )
    out: dict[str, Any] = {}
    missing: list[str] = []  # components the config names that are not installed: all said at once

    def check(path: str, spec: SectionSpec, section: Any, explicit: bool) -> dict:
        try:
            return _validate_section(path, spec, section, manager, explicit=explicit)
        except _NotInstalled as exc:
            missing.append(str(exc))
            return {}

    for key, spec in SECTIONS.items():
        given = key in raw
        value = raw[key] if given else None
        if spec.is_list:
            items = value if given else OmegaConf.create(DEFAULT_REWARDS)
            if not isinstance(items, ListConfig):
                raise ConfigError(f"config key {key!r} must be a list of {{name: ..., weight: ...}} items")
            out[key] = [check(f"{key}[{i}]", spec, item, True) for i, item in enumerate(items)]
            continue
        if spec.kind and not given and spec.default_name is None:
            continue  # e.g. no env section: commands that need one say so
        if value is not None and not isinstance(value, DictConfig):
            raise ConfigError(f"config section {key!r} must be a mapping, got {value!r}")
        section = value if value is not None else OmegaConf.create({})
        out[key] = check(key, spec, section, given)
        for secret_section, secret_key in SECRET_KEYS:
            if key == secret_section and out[key].get(secret_key) == REDACTED:
                out[key][secret_key] = None  # read back from a run directory: use AGENTGYM_ENV_TOKEN
    if len(missing) == 1:
        raise ConfigError(missing[0])
    if missing:
        raise ConfigError(f"{len(missing)} components this config names are not installed:\n  " + "\n  ".join(missing)
                          + "\nInstall them, or drop each such section (~scheduler: the default applies) or name "
                            "another component in its place")
    if STAGES in raw:  # a pipeline: every stage's config is checked now, before the first stage runs
        out[STAGES] = validate_stages(OmegaConf.create(out), raw[STAGES], manager)
    cfg = OmegaConf.create(out)
    OmegaConf.set_readonly(cfg, True)
    return cfg


# -- pipelines: each stage's config is the file's config with the stage's sections on top -----------
def stage_overlays(raw_stages: Any) -> list[dict[str, Any]]:
    """The ``stages`` list as plain dicts, checked: a list of mappings, each with a unique folder-safe ``name``
    and only sections a stage may set."""
    if not isinstance(raw_stages, (list, ListConfig)) or not raw_stages:
        raise ConfigError("'stages' must be a non-empty list of stages, each {name: ..., trainer: {...}, ...}")
    out, seen = [], set()
    for i, stage in enumerate(raw_stages):
        if not isinstance(stage, (dict, DictConfig)):
            raise ConfigError(f"stages[{i}] must be a mapping such as {{name: sft, trainer: {{name: sft}}}}, got {stage!r}")
        data = OmegaConf.to_container(stage, resolve=False) if isinstance(stage, DictConfig) else dict(stage)
        name = data.get("name")
        if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
            raise ConfigError(f"stages[{i}].name is required: the stage's folder name in the run directory (e.g. sft)")
        if name in seen:
            raise ConfigError(f"stages[{i}].name {name!r} is used twice; each stage needs its own folder name")
        seen.add(name)
        for key, value in list(data.items()):
            if key in SECTIONS and SECTIONS[key].kind and not SECTIONS[key].is_list and isinstance(value, str):
                data[key] = {"name": value}  # trainer: sft
        for key in data:
            if key == "name":
                continue
            if key == "run":
                raise ConfigError(f"stages[{i}] ({name}) sets 'run': the run section is the pipeline's (one run "
                                  "directory, one seed); set it at the top of the file")
            if key not in SECTIONS or key == "stages":
                allowed = ", ".join(k for k in SECTIONS if k != "run")
                raise ConfigError(f"stages[{i}] ({name}) has an unknown section {key!r}; a stage may set: name, {allowed}")
        out.append(data)
    return out


def stage_config(base: Any, overlay: dict[str, Any], index: int, *, run_dir: Path, model_path: str | None,
                 manager: Any) -> Any:
    """The validated run config of one stage: *base* (without ``stages``) with the stage's sections, its run
    directory ``run_dir/<name>`` and, after the first stage, the previous stage's model."""
    data = OmegaConf.to_container(base, resolve=True)
    data.pop("stages", None)
    sections = {k: v for k, v in overlay.items() if k != "name"}
    for key, value in sections.items():  # another component (trainer: sft after rl): its own options only
        spec = SECTIONS[key]
        if spec.kind and not spec.is_list and isinstance(value, dict) and value.get("name") not in (
                None, (data.get(key) or {}).get("name")):
            data.pop(key, None)
    if index > 0 and "before" not in (sections.get("eval") or {}):
        sections.setdefault("eval", {})["before"] = False  # it is the previous stage's "after"
    merged = OmegaConf.merge(OmegaConf.create(data), OmegaConf.create(sections))
    merged.run.name, merged.run.output_dir, merged.run.overwrite = overlay["name"], str(run_dir), False
    if model_path is not None:
        merged.model.path = model_path
    try:
        return validate(merged, manager)
    except ConfigError as exc:
        raise ConfigError(f"stages[{index}] ({overlay['name']}): {exc}") from None


def validate_stages(base: Any, raw_stages: Any, manager: Any) -> list[dict[str, Any]]:
    """Check the ``stages`` of a config before anything runs: every stage's merged config must validate."""
    overlays = stage_overlays(raw_stages)
    for i, overlay in enumerate(overlays):
        stage_config(base, overlay, i, run_dir=Path(base.run.output_dir) / base.run.name, model_path=None,
                     manager=manager)
    return overlays


class _NotInstalled(ConfigError):
    """A config names a component no installed plugin registers."""


def _validate_section(path: str, spec: SectionSpec, section: Any, manager: Any, explicit: bool) -> dict:
    if not isinstance(section, DictConfig):
        raise ConfigError(f"config key {path!r} must be a mapping, got {section!r}")
    refuse_colon_keys(path, section)
    if spec.kind is None:
        if not spec.nested:
            return check_section(path, spec.dataclass, section)
        own = OmegaConf.create({k: section[k] for k in section if k not in spec.nested})
        result = check_section(path, spec.dataclass, own)
        for sub, sub_spec in spec.nested.items():  # agent.strategy: a component of its own
            value = section.get(sub) if sub in section else None
            result[sub] = _validate_section(f"{path}.{sub}", sub_spec, OmegaConf.create({}) if value is None else value,
                                            manager, explicit=value is not None)
        return result
    name = section.get("name", spec.default_name)
    if name is None or name == "???":
        raise ConfigError(f"config key '{path}.name' is required: which {SINGULAR[spec.kind]} to use")
    core_keys = {f.name for f in dataclasses.fields(spec.dataclass)}
    core_part = {k: v for k, v in section.items() if k in core_keys}
    core_part["name"] = name
    rest = OmegaConf.create({k: section[k] for k in section if k not in core_keys})
    if spec.kind == "backends" and name == "auto":
        comp_cls = None
    else:
        try:
            entry = manager.registry(spec.kind).get(name)
        except UnknownNameError as exc:
            if not explicit:
                # A default component that is not installed: keep the section, let the command
                # that needs it fail with this message.
                return {"name": name}
            raise _NotInstalled(f"config key '{path}.name': {exc}") from None
        try:
            comp_cls = entry.config_class()
        except AgentGymError as exc:
            raise ConfigError(f"config key '{path}.name' ({name!r}): {exc}") from exc
    valid = core_keys | ({f.name for f in dataclasses.fields(comp_cls)} if comp_cls else set())
    unknown = [str(key) for key in rest if comp_cls is None or key not in valid]
    if len(unknown) == 1:
        raise ConfigError(
            f"unknown config key '{path}.{unknown[0]}'.{did_you_mean(unknown[0], valid)} Valid keys under {path} "
            f"({SINGULAR[spec.kind]} {name!r}): {', '.join(sorted(valid))}"
        )
    if unknown:  # typically the options of another component, left behind when its name changed
        keys = ", ".join(f"{path}.{k}" for k in unknown)
        raise ConfigError(
            f"{len(unknown)} keys under {path} are not options of {SINGULAR[spec.kind]} {name!r}: {keys}. If they "
            f"belong to the {SINGULAR[spec.kind]} the file was written for, remove them when switching to {name!r}. "
            f"Valid keys under {path}: {', '.join(sorted(valid))}"
        )
    result = check_section(path, spec.dataclass, OmegaConf.create(core_part))
    if comp_cls is not None:
        result.update(check_section(path, comp_cls, rest))
    result["name"] = name
    return result


def component_options(cfg_section: Any, kind: str, manager: Any) -> dict[str, Any]:
    """The keyword options for building the component a section selects (core's keys removed)."""
    spec = _component_spec(kind)
    data = OmegaConf.to_container(cfg_section, resolve=True) if not isinstance(cfg_section, dict) else dict(cfg_section)
    core_keys = {f.name for f in dataclasses.fields(spec.dataclass)}
    return {k: v for k, v in data.items() if k not in core_keys}


def _component_spec(kind: str) -> SectionSpec:
    """The section spec that selects a component of *kind* (a top-level section, or one nested in one)."""
    specs = [*SECTIONS.values(), *(n for s in SECTIONS.values() for n in s.nested.values())]
    return next(s for s in specs if s.kind == kind)


def build_component(manager: Any, kind: str, cfg_section: Any, *args: Any, **extra: Any) -> Any:
    """Instantiate the component a config section selects, with its options as keywords."""
    name = cfg_section["name"]
    options = component_options(cfg_section, kind, manager)
    options.update(extra)
    cls = manager.registry(kind).load(name)
    try:
        return cls(*args, **options)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"cannot build {SINGULAR[kind]} {name!r} from its config: {exc}") from exc


def to_yaml(cfg: DictConfig, *, redact: bool = True) -> str:
    """The config as YAML; secrets (``env.token``) are replaced by ``<redacted>``.

    A redacted token read back (``--resume``) counts as unset, and the env token then comes
    from ``AGENTGYM_ENV_TOKEN``, the way to pass it without writing it anywhere.
    """
    data = OmegaConf.to_container(cfg, resolve=True)
    if redact:
        for section, key in SECRET_KEYS:
            if isinstance(data.get(section), dict) and data[section].get(key):
                data[section][key] = REDACTED
    return OmegaConf.to_yaml(OmegaConf.create(data))
