"""``agentgym report RUN``: write run_dir/report.html (self-contained) and report.md."""
from __future__ import annotations

import click


@click.command("report")
@click.argument("run", type=click.Path(file_okay=False))
@click.option("--episodes", default=3, show_default=True, help="How many best and worst episodes to include.")
@click.option("--no-plots", is_flag=True, help="Do not re-render the curves (use plots/ as it is).")
def report(run: str, episodes: int, no_plots: bool) -> None:
    """Write an HTML and a Markdown report of RUN: config, curves, eval table, best and worst episodes.

    RUN may be a pipeline (a config with stages:): each stage gets its report and the pipeline a page of
    its stages in order with their evaluations side by side."""
    from agentgym_core.pipeline import is_pipeline_dir
    from agentgym_inspect.report import write_report
    from agentgym_inspect.runs import RunDirError, is_run_dir

    if is_pipeline_dir(run):  # a config with stages: every stage's report and one page of the stages
        from agentgym_inspect.pipeline_report import write_pipeline_report

        html_path, md_path = write_pipeline_report(run, episodes=episodes, render=not no_plots)
        click.echo(f"Wrote {html_path} and {md_path} (and each stage's report in its folder)")
        return
    if not is_run_dir(run):
        raise RunDirError(f"{run!r} is not a run directory (no metrics.jsonl, checkpoints/ or trajectories/); pass runs/<name>")
    html_path, md_path = write_report(run, episodes=episodes, render=not no_plots)
    click.echo(f"Wrote {html_path} and {md_path}")
