"""Compose a run config: YAML files + dotlist overrides, validated against dataclasses.

    cfg = load_config(["configs/quickstart.yaml"], ["trainer.lr=1e-6", "scheduler.rounds=[6,13,20]"])

Every section is checked before anything starts: an unknown key names its full path and
the closest valid key; a wrong type or bad value names the key and what is expected; an
unknown component name lists what is installed.
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
from .options import refuse_unknown_options
from .registry import SINGULAR
from .config_schema import DEFAULT_REWARDS, SECTIONS, STAGES, SectionSpec


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
    overrides = [_shorthand_override(item) for item in overrides]
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"override {item!r} must look like key.path=value (e.g. trainer.lr=1e-6)")
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
    for key, spec in SECTIONS.items():
        given = key in raw
        value = raw[key] if given else None
        if spec.is_list:
            items = value if given else OmegaConf.create(DEFAULT_REWARDS)
            if not isinstance(items, ListConfig):
                raise ConfigError(f"config key {key!r} must be a list of {{name: ..., weight: ...}} items")
            out[key] = [
                _validate_section(f"{key}[{i}]", spec, item, manager, explicit=True)
                for i, item in enumerate(items)
            ]
            continue
        if spec.kind and not given and spec.default_name is None:
            continue  # e.g. no env section: commands that need one say so
        if value is not None and not isinstance(value, DictConfig):
            raise ConfigError(f"config section {key!r} must be a mapping, got {value!r}")
        section = value if value is not None else OmegaConf.create({})
        out[key] = _validate_section(key, spec, section, manager, explicit=given)
        for secret_section, secret_key in SECRET_KEYS:
            if key == secret_section and out[key].get(secret_key) == REDACTED:
                out[key][secret_key] = None  # read back from a run directory: use AGENTGYM_ENV_TOKEN
    if STAGES in raw:  # a pipeline: every stage's config is checked now, before the first stage runs
        from .pipeline import validate_stages

        out[STAGES] = validate_stages(OmegaConf.create(out), raw[STAGES], manager)
    cfg = OmegaConf.create(out)
    OmegaConf.set_readonly(cfg, True)
    return cfg


def _validate_section(path: str, spec: SectionSpec, section: Any, manager: Any, explicit: bool) -> dict:
    if not isinstance(section, DictConfig):
        raise ConfigError(f"config key {path!r} must be a mapping, got {section!r}")
    _no_colon_keys(path, section)
    if spec.kind is None:
        if not spec.nested:
            return _check(path, spec.dataclass, section)
        own = OmegaConf.create({k: section[k] for k in section if k not in spec.nested})
        result = _check(path, spec.dataclass, own)
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
            raise ConfigError(f"config key '{path}.name': {exc}") from None
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
    result = _check(path, spec.dataclass, OmegaConf.create(core_part))
    if comp_cls is not None:
        result.update(_check(path, comp_cls, rest))
    result["name"] = name
    return result


def _check(path: str, cls: type, section: DictConfig) -> dict:
    """Validate *section* against dataclass *cls*; return the filled plain dict."""
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


def _no_colon_keys(path: str, section: DictConfig) -> None:
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
    _no_colon_keys(path, section)
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
        _check("options", cls, section)
    except ConfigError as exc:
        msg = str(exc).replace("config key 'options.", "option '").replace("config section 'options'", "options")
        raise ConfigError(f"{what}: {msg}") from None


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


#: Config keys that hold secrets: written as REDACTED to run directories and printouts.
SECRET_KEYS = (("env", "token"),)
REDACTED = "<redacted>"


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
