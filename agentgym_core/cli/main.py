"""Entry point of ``agentgym``. Kept import-light: ``agentgym --help`` loads no plugin.

Each subcommand is an import string, loaded only when invoked (or listed by ``--help``).
A command module that is not present (a later feature) is simply not listed.
"""
from __future__ import annotations

import importlib
import os
import sys

import click

from agentgym_core import __version__

#: name -> "module:attribute" of a click command. Ordered as ``--help`` shows them.
COMMANDS = {
    "plugins": "agentgym_core.cli.plugins_cmd:plugins",
    "list": "agentgym_core.cli.plugins_cmd:list_components",
    "config": "agentgym_core.cli.config_cmd:config",
    "new": "agentgym_core.cli.new_cmd:new",
    "env": "agentgym_core.cli.env_cmd:env",
    "rollout": "agentgym_core.cli.rollout_cmd:rollout",
    "train": "agentgym_core.cli.train_cmd:train",
    "eval": "agentgym_core.cli.eval_cmd:eval_",
    "report": "agentgym_core.cli.report_cmd:report",
    "view": "agentgym_core.cli.view_cmd:view",
}

SHORT_HELP = {
    "plugins": "List installed plugins and what each registered.",
    "list": "List registered components of one kind.",
    "config": "Compose and inspect run configs.",
    "new": "Create a new plugin package from the template.",
    "env": "Serve or play an environment.",
    "rollout": "Play episodes with a model and report success and speed.",
    "train": "Train an agent with RL from a config.",
    "eval": "Evaluate a model on an env's test split.",
    "report": "Write an HTML/Markdown report of a run.",
    "view": "Browse a run's episodes in a local web page.",
}


def _available(name: str) -> bool:
    module = COMMANDS[name].partition(":")[0]
    return importlib.util.find_spec(module) is not None


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return [n for n in COMMANDS if _available(n)]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS or not _available(name):
            return None
        module_name, _, attr = COMMANDS[name].partition(":")
        return getattr(importlib.import_module(module_name), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(n, SHORT_HELP.get(n, "")) for n in self.list_commands(ctx)]
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
