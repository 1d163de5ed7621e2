"""``agentgym view RUN [--port N]``: browse a run's episodes in a local (loopback-only) web page."""
from __future__ import annotations

import click


@click.command("view")
@click.argument("run", type=click.Path(file_okay=False), required=False)
@click.option("--port", default=8765, show_default=True, help="Port on 127.0.0.1 (0: any free port).")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the default browser.")
@click.option("--sample", type=click.Path(file_okay=False), default=None,
              help="Write a synthetic sample run into this folder and view it (to try the viewer).")
def view(run: str | None, port: int, open_browser: bool, sample: str | None) -> None:
    """Serve a page to browse RUN: steps, episodes (filter, search), each episode turn by turn."""
    from agentgym_inspect.runs import RunDirError, is_run_dir
    from agentgym_inspect.viewer.server import serve

    if sample:
        from agentgym_inspect.viewer.sample import write_sample_run

        run = str(write_sample_run(sample, steps=12, episodes_per_step=64))
    if not run:
        raise click.UsageError("give a run directory (runs/<name>), or --sample DIR to try the viewer")
    if not is_run_dir(run):
        raise RunDirError(f"{run!r} is not a run directory (no metrics.jsonl, checkpoints/ or trajectories/); pass runs/<name>")

    def ready(url: str) -> None:
        click.echo(f"Viewing {run} at {url} (loopback only; Ctrl-C to stop)")
        if open_browser:
            import webbrowser

            webbrowser.open(url)

    serve(run, port, on_ready=ready)
