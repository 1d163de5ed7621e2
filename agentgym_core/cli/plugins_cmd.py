"""``agentgym plugins`` and ``agentgym list KIND``."""
from __future__ import annotations

import json

import click

from agentgym_core.kinds import KINDS


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def plugins(as_json: bool) -> None:
    """List installed plugins: name, distribution, version and what each registered."""
    from agentgym_core.plugins import get_plugin_manager

    manager = get_plugin_manager()
    infos = [info.to_dict() for info in manager.plugins.values()]
    if as_json:
        click.echo(json.dumps(infos, indent=2))
        return
    for info in infos:
        dist = info["distribution"] or "-"
        version = info["version"] or "-"
        tag = " (internal)" if info["internal"] else ""
        click.echo(f"{info['name']}{tag}  {dist} {version}")
        for kind, names in info["registered"].items():
            click.echo(f"    {kind}: {', '.join(names)}")


#: What ``agentgym list`` takes: the registry kinds, and ``loggers`` (plugins that observe a run).
LISTABLE = (*KINDS, "loggers")


class KindChoice(click.Choice):
    """A listable kind; the singular (``env``) and any case are read as the kind (``envs``), and anything else
    is refused with a did-you-mean."""

    def convert(self, value, param, ctx):
        from agentgym_core.errors import did_you_mean
        from agentgym_core.kinds import SINGULAR

        text = str(value).strip().lower()
        plural = {v: k for k, v in SINGULAR.items()}.get(text, text)
        if text == "logger":
            plural = "loggers"
        if plural in self.choices:
            return plural
        self.fail(f"{value!r} is not a kind of plugin.{did_you_mean(text, self.choices)} Kinds: "
                  f"{', '.join(self.choices)}", param, ctx)


@click.command("list", help=f"List registered components of KIND ({', '.join(KINDS)}), or the loggers: plugins "
                            "that observe training runs through the lifecycle hooks.")
@click.argument("kind", type=KindChoice(LISTABLE))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_components(kind: str, as_json: bool) -> None:
    from agentgym_core.plugins import get_plugin_manager

    manager = get_plugin_manager()
    if kind == "loggers":
        rows = loggers(manager)
        if as_json:
            click.echo(json.dumps(rows, indent=2))
            return
        width = max((len(r["name"]) for r in rows), default=0)
        for r in rows:
            click.echo(f"{r['name']:<{width}}  [{r['distribution'] or '-'}]  {', '.join(r['hooks'])}")
        if not rows:
            click.echo("no loggers installed (plugins with lifecycle hooks: on_run_start, on_step_end, ...)")
        for line in switched_off(manager, kind):
            click.echo(line)
        return
    entries = manager.registry(kind).entries()
    if as_json:
        click.echo(json.dumps([e.to_dict() for e in entries], indent=2))
        return
    if not entries:
        off = switched_off(manager, kind)
        click.echo(f"no {kind} registered" + (" (installed ones are switched off)" if off else " (none installed)"))
    width = max((len(e.name) for e in entries), default=0)
    for e in entries:
        desc = f"  {e.description}" if e.description else ""
        click.echo(f"{e.name:<{width}}  [{e.plugin}]{desc}")
    for line in switched_off(manager, kind):
        click.echo(line)


def loggers(manager) -> list[dict]:
    """Plugins implementing a lifecycle hook (``on_run_start``, ``on_step_end``, ...), with the hooks."""
    from agentgym_core.hookspecs import LIFECYCLE_HOOKS

    found: dict[str, list[str]] = {}
    for hook in LIFECYCLE_HOOKS:
        for impl in getattr(manager.hook, hook).get_hookimpls():
            found.setdefault(impl.plugin_name, []).append(hook)
    return [{"name": name, "distribution": manager.plugins[name].distribution, "hooks": hooks}
            for name, hooks in sorted(found.items()) if name in manager.plugins]


def switched_off(manager, kind: str) -> list[str]:
    """One line per installed plugin that AGENTGYM_DISABLE_PLUGINS / AGENTGYM_LOAD_PLUGINS left out
    and that provides (or, unknown to the catalogue, may provide) components of *kind*."""
    from agentgym_core.catalogue import BY_NAME

    lines = []
    for name, (dist, switch) in sorted(manager.switched_off.items()):
        known = BY_NAME.get(dist or "")
        provides = known.provides.get(kind, ()) if known is not None else None
        if provides == ():
            continue
        what = f"its {kind} ({', '.join(provides)})" if provides else f"any {kind} it registers"
        lines.append(f"switched off: plugin {name!r} ({dist or 'no distribution'}) by {switch}; "
                     f"{what} not listed")
    return lines
