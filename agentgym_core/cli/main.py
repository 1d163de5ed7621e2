"""Entry point of ``agentgym``. Kept import-light: ``agentgym --help`` imports no command module,
and with the cached command index (:mod:`.command_index`) no plugin either.

The commands are what the ``register_commands`` hook registered, as import strings: core's
(``train``, ``eval``, ...) through its internal plugin, others from plugins (``view``,
``report`` and ``compare`` come from ``agentgym-inspect``). A command's module is imported only
when it runs or its help is asked for.
"""
from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

from agentgym_core import __version__


def _manager(*, warn: bool) -> tuple[Any, Exception | None]:
    """The plugin manager, and the error of a plugin that failed to load. Such a plugin leaves
    core's commands usable (``agentgym plugins`` says what is wrong), so ``--help`` never breaks;
    with *warn*, the error is said as a warning."""
    from agentgym_core.errors import PluginLoadError
    from agentgym_core.plugins import get_plugin_manager

    try:
        return get_plugin_manager(), None
    except PluginLoadError as exc:
        if warn:
            click.secho(f"warning: {exc}", fg="yellow", err=True)
        return get_plugin_manager(entrypoints=False, fresh=True), exc


def _index(*, warn: bool) -> list[tuple[str, str, str]]:
    """Every command as (name, import string, description): the cached index (no plugin imported),
    else from the plugins, indexed for next time when they all loaded."""
    from . import command_index

    cached = command_index.load()
    if cached is not None:
        return cached
    manager, broken = _manager(warn=warn)
    if broken is None:
        return command_index.store(manager)
    return [(e.name, e.target, e.description) for e in manager.registry("commands").in_order()]


def _load(target: str) -> click.Command:
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name, _, _ in _index(warn=False)]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        from agentgym_core.errors import UnknownNameError

        from . import command_index

        target = next((t for n, t, _ in command_index.load() or () if n == name), None)
        if target is not None:
            try:
                return _load(target)
            except (ImportError, AttributeError):  # moved since the index was written: ask the plugins
                pass
        manager, broken = _manager(warn=False)
        try:
            entry = manager.registry("commands").get(name)
        except UnknownNameError as exc:  # did you mean, or which distribution provides it
            if broken is not None:  # perhaps the broken plugin's command: its error says what to do
                raise broken from None
            raise click.UsageError(str(exc), ctx) from None
        return _load(entry.target)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, description) for name, _, description in _index(warn=True)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="agentgym")
@click.option("--debug", is_flag=True, envvar="AGENTGYM_DEBUG", help="Show tracebacks of errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """AgentGym: train LLM agents for multi-turn decision making with RL.

    Environments, rewards, schedulers, backends, trainers and engines are plugins;
    `agentgym plugins` shows what is installed.
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
    if debug:
        os.environ["AGENTGYM_DEBUG"] = "1"


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; user errors print one line (no traceback unless ``--debug``)."""
    from agentgym_core.errors import AgentGymError

    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args or os.environ.get("AGENTGYM_DEBUG") == "1"
    try:
        cli.main(args=args, prog_name="agentgym", standalone_mode=False)
    except AgentGymError as exc:
        if debug:
            raise
        click.secho(f"Error: {exc}", fg="red", err=True)
        return 1
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        return 130
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
