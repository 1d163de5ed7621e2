"""``agentgym env serve NAME`` (an HTTP env server) and ``agentgym env play NAME`` (a human at the terminal)."""
from __future__ import annotations

import json
import sys

import click

from agentgym_core.errors import AgentGymError


@click.group()
def env() -> None:
    """Serve or play an environment."""


def _options(raw: str | None) -> dict:
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise AgentGymError(f"--options must be a JSON object, e.g. '{{\"size\": 4}}': {exc}") from None
    if not isinstance(value, dict):
        raise AgentGymError(f"--options must be a JSON object, e.g. '{{\"size\": 4}}', got {raw!r}")
    return value


@env.command()
@click.argument("name")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind (loopback by default).")
@click.option("--port", default=0, show_default=True, type=int, help="Port (0: pick a free one and print it).")
@click.option("--max-sessions", default=1024, show_default=True, type=click.IntRange(min=1), help="Session cap (429 above).")
@click.option("--token", default=None, envvar="AGENTGYM_ENV_TOKEN", help="Require 'Authorization: Bearer TOKEN'.")
@click.option("--ttl", default=600.0, show_default=True, type=float, help="Close sessions idle this many seconds (0: never).")
@click.option("--max-body", default=1 << 20, show_default=True, type=click.IntRange(min=64), help="Largest request body in bytes.")
@click.option("--max-batch-ops", default=256, show_default=True, type=click.IntRange(min=1),
              help="Most ops in one POST /batch (422 above, naming the cap).")
@click.option("--max-batch-bytes", default=1 << 20, show_default=True, type=click.IntRange(min=64),
              help="Largest POST /batch body in bytes (413 above; --max-body applies too).")
@click.option("--workers", default=64, show_default=True, type=click.IntRange(min=1),
              help="Most threads running env code at once.")
@click.option("--adapt-workers/--fixed-workers", default=True, show_default=True,
              help="Run only as many env calls at once as pay off (fewer while env code keeps a core busy), "
                   "or always --workers.")
@click.option("--options", "options_json", default=None, help="JSON object of env options (constructor keywords).")
@click.option("--exit-with-parent", type=int, default=None, hidden=True, help="Stop when this parent process is gone.")
@click.option("--log-level", default="warning", show_default=True, help="uvicorn log level.")
def serve(name: str, host: str, port: int, max_sessions: int, token: str | None, ttl: float, max_body: int,
          max_batch_ops: int, max_batch_bytes: int, workers: int, adapt_workers: bool, options_json: str | None,
          exit_with_parent: int | None, log_level: str) -> None:
    """Serve env NAME (a registered name or module:Class) over HTTP; see docs/envs.md."""
    from agentgym_core.env.server import ServerSettings
    from agentgym_core.env.host import build_env_server, run_server

    if host not in ("127.0.0.1", "localhost", "::1") and not token:
        click.secho(f"warning: serving on {host} without --token: anyone who can reach this port can use it",
                    fg="yellow", err=True)
    settings = ServerSettings(max_sessions=max_sessions, token=token or None, ttl=ttl, max_body=max_body,
                              max_batch_ops=max_batch_ops, max_batch_bytes=max_batch_bytes, workers=workers,
                              adapt_workers=adapt_workers)
    server = build_env_server(name, _options(options_json), settings=settings)

    def ready(url: str) -> None:
        click.echo(f"agentgym env server {name!r} listening on {url}")
        sys.stdout.flush()

    run_server(server, host, port, on_ready=ready, parent_pid=exit_with_parent, log_level=log_level)


@env.command()
@click.argument("name")
@click.option("--task-id", default=None, type=click.IntRange(min=0), help="Task id (default: the first of the train split).")
@click.option("--options", "options_json", default=None, help="JSON object of env options (constructor keywords).")
def play(name: str, task_id: int | None, options_json: str | None) -> None:
    """Play env NAME (a registered name or module:Class) in the terminal, one action per line."""
    from agentgym_core.env.host import env_factory
    from agentgym_core.env.spec import EnvSpec

    factory, _ = env_factory(name, _options(options_json))
    with factory() as instance:
        spec = EnvSpec.from_env(instance, name=name)
        if task_id is None:
            task_id = spec.ids("train")[0] if "train" in spec.splits else next(iter(spec.splits.values()))[0]
        else:
            spec.check_task(task_id)  # an id outside every split is not a task of this env
        click.secho(f"# {name}, task {task_id}", bold=True)
        if instance.instruction:
            click.echo(instance.instruction.strip())
        what = {"react": " (what would follow 'Action:')", "tags": " (what would go inside the tags)"}
        click.echo(f"(type the action itself{what.get(instance.action_format, '')}, one per line; end with Ctrl-D)\n")
        click.echo(_call(name, f"reset(task_id={task_id})", instance.reset, task_id=task_id))
        total, steps = 0.0, 0
        while True:
            click.echo("> ", nl=False)
            line = sys.stdin.readline()
            if not line:
                click.echo("\n(end of input)")
                break
            action = line.rstrip("\n")
            if not action.strip():
                continue
            obs, reward, done, info = _call(name, f"step({action!r})", instance.step, action)
            steps += 1
            total += float(reward)
            click.echo(obs)
            extra = "  (invalid action)" if info.get("invalid_action") else ""
            click.secho(f"[reward {float(reward):g}  total {total:g}  done {bool(done)}]{extra}", fg="cyan")
            if done:
                outcome = "success" if info.get("success") else "ended"
                click.secho(f"Episode {outcome} after {steps} steps, return {total:g}.", bold=True)
                break


def _call(name: str, what: str, fn, *args, **kwargs):
    """Run the env's reset or step; an exception becomes one line naming the env and the call."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the env's own code: report it, don't dump a traceback
        raise AgentGymError(f"env {name!r} raised in {what}: {type(exc).__name__}: {exc} "
                            "(agentgym --debug env play ... shows the traceback)") from exc
