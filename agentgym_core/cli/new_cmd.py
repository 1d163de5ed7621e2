"""``agentgym new plugin NAME --kind KIND``."""
from __future__ import annotations

from pathlib import Path

import click

from agentgym_core.kinds import SCAFFOLD_KINDS


@click.group()
def new() -> None:
    """Create new things from templates."""


@new.command("plugin")
@click.argument("name")
@click.option("--kind", type=click.Choice(sorted(SCAFFOLD_KINDS)), default="env", show_default=True)
@click.option("-o", "--output-dir", type=click.Path(file_okay=False), default=".", show_default=True)
def plugin(name: str, kind: str, output_dir: str) -> None:
    """Write an installable plugin package NAME of KIND into OUTPUT_DIR."""
    from agentgym_core.scaffold import create_plugin

    path = create_plugin(name, kind, Path(output_dir))
    click.echo(f"created {path}")
    click.echo(f"next: pip install -e {path} && agentgym plugins")
