"""``agentgym plugins`` and ``agentgym list KIND``."""
from __future__ import annotations

import json

import click

from agentgym_core.registry import KINDS


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


@click.command("list")
@click.argument("kind", type=click.Choice(KINDS))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_components(kind: str, as_json: bool) -> None:
    """List registered components of KIND (envs, rewards, schedulers, backends, trainers, engines)."""
    from agentgym_core.plugins import get_plugin_manager

    entries = get_plugin_manager().registry(kind).entries()
    if as_json:
        click.echo(json.dumps([e.to_dict() for e in entries], indent=2))
        return
    if not entries:
        click.echo(f"no {kind} installed")
        return
    width = max(len(e.name) for e in entries)
    for e in entries:
        desc = f"  {e.description}" if e.description else ""
        click.echo(f"{e.name:<{width}}  [{e.plugin}]{desc}")
