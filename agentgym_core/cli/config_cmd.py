"""``agentgym config show -c FILE [key=value ...]``."""
from __future__ import annotations

import click


@click.group()
def config() -> None:
    """Compose and inspect run configs."""


@config.command("show")
@click.option("-c", "--config", "files", multiple=True, type=click.Path(), help="YAML file(s), merged in order.")
@click.argument("overrides", nargs=-1)
def show(files: tuple[str, ...], overrides: tuple[str, ...]) -> None:
    """Print the resolved config (files + dotlist OVERRIDES such as trainer.lr=1e-6)."""
    from agentgym_core.config import load_config, to_yaml

    click.echo(to_yaml(load_config(list(files), overrides)), nl=False)
