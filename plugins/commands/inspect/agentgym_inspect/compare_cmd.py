"""``agentgym compare RUN [RUN ...]``: overlaid curves, an HTML page and an evaluation table."""
from __future__ import annotations

import click


@click.command("compare")
@click.argument("runs", nargs=-1, required=True, type=click.Path(file_okay=False))
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Folder for the PNGs, compare.html, compare.md and compare.json [default: compare/ next to the runs].")
@click.option("--no-group", is_flag=True, help="Draw every run on its own instead of seeds as mean and min-max band.")
@click.option("--smooth", default=1, show_default=True, type=click.IntRange(min=1),
              help="Moving average over N steps of each drawn curve.")
def compare(runs: tuple[str, ...], out: str | None, no_group: bool, smooth: int) -> None:
    """Compare training runs: success, reward, turns, horizon and tokens/s against step and wall time.

    Evaluations scored by a model judge (a judge among the rewards) are drawn in judged.png too.

    Runs with the same config but another run.seed (agentgym train --seeds) are drawn as one
    curve: their mean with a band from the lowest to the highest seed. A pipeline (stages:) counts as its
    stages' runs, in order.
    """
    from pathlib import Path

    from agentgym_inspect.compare import default_out, write_comparison

    from agentgym_core.pipeline import is_pipeline_dir, stage_dirs

    runs = tuple(str(folder) for r in runs for folder in ([f for _, f in stage_dirs(r)] if is_pipeline_dir(r) else [r]))
    target = Path(out) if out else default_out([Path(r) for r in runs])
    data = write_comparison(list(runs), target, by_seed=not no_group, smooth=smooth)
    for g in data["groups"]:
        click.echo(f"{g['label']}: {len(g['runs'])} run{'s' if len(g['runs']) != 1 else ''} ({', '.join(g['runs'])})")
    for name in data["judged"]:  # a model judge among the rewards scored the evaluations
        click.echo(f"{name}: the evaluations' judged scores are in judged.png and the tables")
    click.echo(f"Wrote {target / 'compare.html'}, compare.md, compare.json and {len(data['figures'])} PNGs in {target}")
