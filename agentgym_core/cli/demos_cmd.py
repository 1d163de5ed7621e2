"""``agentgym demos ENV --split train --episodes N --out PATH``: an expert's episodes as chat-messages JSONL.

    agentgym demos textcraft --episodes 200 --out runs/demos/textcraft.jsonl
    agentgym demos -c configs/textcraft-sft-rl.yaml --episodes 200 --out demos.jsonl   # the run's agent settings
"""
from __future__ import annotations

from pathlib import Path

import click


@click.command("demos")
@click.argument("env", required=False)
@click.option("-c", "--config", "files", multiple=True, type=click.Path(),
              help="Run config YAML(s): the env options and agent settings (instruction position, action format, "
                   "system prompt) the demonstrations are written for. Use the config you will train with.")
@click.option("--expert", default=None, help="Expert to play (`agentgym list experts`) [default: the env's first].")
@click.option("--split", default="train", show_default=True, help="Split to take tasks from (never the eval split).")
@click.option("--episodes", type=click.IntRange(min=1), default=100, show_default=True,
              help="Episodes to write (successful ones unless --all).")
@click.option("--max-turns", type=click.IntRange(min=1), default=None,
              help="Horizon per episode [default: the scheduler's final one, as the agent gets].")
@click.option("--all", "keep_all", is_flag=True, help="Keep failed episodes too (default: successful ones only).")
@click.option("--out", type=click.Path(dir_okay=False), required=True, help="JSONL file to write.")
@click.argument("overrides", nargs=-1)
def demos(env: str | None, files: tuple[str, ...], expert: str | None, split: str, episodes: int,
          max_turns: int | None, keep_all: bool, out: str, overrides: tuple[str, ...]) -> None:
    """Record an expert's episodes on training tasks as chat-messages JSONL (for `trainer.name: sft`).

    Each line is one episode's conversation (system/user/assistant messages), written as the RL
    agent of the config would have written it (same instruction, same place, same action
    format), with the env, task id, split and reward. OVERRIDES are key.path=value config keys.
    """
    from agentgym_core.config import load_config
    from agentgym_core.demos import record_demos
    from agentgym_core.plugins import get_plugin_manager

    manager = get_plugin_manager()
    given = [f"env.name={env}"] if env else []
    cfg = load_config(list(files), [*given, *overrides], manager=manager)
    if "env" not in cfg:
        raise click.UsageError("name the env (agentgym demos ENV) or give a config with an env section (-c)")
    record_demos(cfg, manager, Path(out), expert=expert, split=split, episodes=episodes, max_turns=max_turns,
                 keep_all=keep_all, say=lambda line: click.echo(line, err=True))
