"""``agentgym eval``: run a model on an env's test split and report Avg@k, Pass@k, success, turns.

    agentgym eval -c configs/quickstart.yaml --model runs/quickstart --k 4
    agentgym eval --model runs/quickstart            # the run's own config.yaml and latest checkpoint
    agentgym eval -c configs/quickstart.yaml --model smollm2-135m-instruct --strategy reflect agent.strategy.attempts=2
    agentgym eval --compare runs/a runs/b eval.json  # side by side
"""
from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import click

from agentgym_core.errors import AgentGymError


def resolve_model(model: str) -> tuple[str, Path | None]:
    """``(model path, run dir)``: a run directory means its latest checkpoint."""
    from agentgym_core.models import BUNDLED, is_alias, looks_like_hub_id
    from agentgym_core.rundir import RunDir, is_run_dir

    from agentgym_core.pipeline import is_pipeline_dir, stage_dirs

    if is_pipeline_dir(model):  # a pipeline: its last stage that has a checkpoint
        stages = [folder for _, folder in stage_dirs(model) if RunDir(folder).latest_checkpoint() is not None]
        if not stages:
            raise AgentGymError(f"pipeline {model!r} has no stage with a checkpoint yet")
        model = str(stages[-1])
    if is_run_dir(model):
        run = RunDir(model)
        return str(run.require_checkpoint()), run.path
    path = Path(model).expanduser()
    if not is_alias(model) and not path.exists() and not looks_like_hub_id(model):  # a hub id: the loader's to find
        from agentgym_core.errors import did_you_mean

        parent = path.parent if path.parent.is_dir() else None
        near = did_you_mean(path.name, [p.name for p in parent.iterdir()]) if parent else ""
        raise AgentGymError(
            f"--model {model!r} does not exist.{near} Pass a run directory (runs/<name>), a model folder "
            f"with config.json, a Hugging Face hub id (org/name), or a bundled alias ({', '.join(BUNDLED)})"
        )
    return model, None


def config_file_hint(arg: str) -> str:
    """For a positional argument that is a YAML file: how to pass it as a config (-c); else ''."""
    if "=" in arg or not arg.endswith((".yaml", ".yml")):
        return ""
    if Path(arg).is_file():
        return f"; {arg!r} is a config file: pass it with -c {arg}"
    return f"; config files go after -c, and {arg!r} does not exist"


def comparison_inputs(items: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """``{column name: summary}`` from run dirs (their ``eval/*.json``) and summary JSON files."""
    from agentgym_core.rundir import RunDir, is_run_dir, load_summary

    from agentgym_core.pipeline import is_pipeline_dir, stage_dirs

    out: dict[str, dict[str, Any]] = {}
    for item in items:
        p = Path(item)
        if is_pipeline_dir(p):  # its stages in order: sft:before, sft:after, rl:after, ...
            evals = {f"{name}:{tag}": summary for name, folder in stage_dirs(p)
                     for tag, summary in RunDir(folder).eval_results().items()}
            if not evals:
                raise AgentGymError(f"--compare: pipeline {item!r} has no evaluation yet")
            if len(items) == 1:
                out.update(evals)
            else:  # several: each one's latest result (its last stage's)
                key, summary = list(evals.items())[-1]
                out[f"{p.resolve().name}/{key}"] = summary
        elif p.is_dir():
            if not is_run_dir(p) and not (p / "eval").is_dir():
                raise AgentGymError(f"--compare: {item!r} is neither a run directory nor an eval JSON file")
            evals = RunDir(p).eval_results()
            if not evals:
                raise AgentGymError(
                    f"--compare: run {item!r} has no evaluation (eval/*.json); run `agentgym eval --model {item}` first"
                )
            run_name = p.resolve().name
            if len(items) == 1:  # one run: everything it has, e.g. before vs after training
                out.update({f"{run_name}:{name}": summary for name, summary in evals.items()})
            else:  # several runs: each one's latest result
                out[run_name if run_name not in out else item] = evals[_latest(evals)]
        elif p.is_file():
            summary = load_summary(p)
            if summary is None:
                raise AgentGymError(f"--compare: {item!r} is not an evaluation summary (no 'overall' key)")
            out[p.stem if p.stem not in out else item] = summary
        else:
            raise AgentGymError(f"--compare: {item!r} does not exist; pass run directories or eval JSON files")
    return out


def _latest(evals: dict[str, Any]) -> str:
    return "after" if "after" in evals else list(evals)[-1]


async def _evaluate(cfg: Any, model_path: str, plan: Any, *, local: bool, manager: Any,
                    dump_path: Path | None) -> tuple[dict, list]:
    from agentgym_core.assembly import assemble
    from agentgym_core.evaluation import evaluate

    parts = await assemble(cfg, manager, local=local)
    try:
        parts.env.ids(plan.split)  # an unknown split fails before the model loads
        parts.load_engine(model_path)
        return await evaluate(parts, plan, model=model_path, dump_path=dump_path)
    finally:
        await parts.aclose()  # the rewards too (a judge's connections and loop thread)


def default_out(model: str, run_dir: Path | None, split: str, k: int, strategy: str = "default") -> Path:
    """``runs/<name>/eval/test-k1.json`` or ``eval-<model>-test-k1.json`` (``-<strategy>`` unless the default)."""
    tail = f"{split}-k{k}" + (f"-{strategy}" if strategy != "default" else "")
    if run_dir is not None:
        return run_dir / "eval" / f"{tail}.json"
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(model).name or model).strip("-") or "model"
    return Path(f"eval-{slug}-{tail}.json")


@click.command("eval")
@click.option("-c", "--config", "files", multiple=True, type=click.Path(), help="Run config YAML(s); default: the run's config.yaml.")
@click.option("--model", help="A model folder, a bundled alias, or a run directory (its latest checkpoint).")
@click.option("--split", default=None, help="Env split to evaluate on [default: eval.split, i.e. test].")
@click.option("--k", "k", type=int, default=None, help="Samples per task for Avg@k / Pass@k [default: eval.k].")
@click.option("--tasks", type=int, default=None, help="Number of tasks from the split, 0 for all [default: eval.tasks].")
@click.option("--temperature", type=float, default=None, help="Sampling temperature [default: eval.temperature; rollout's when k > 1].")
@click.option("--max-turns", type=int, default=None, help="Horizon per episode [default: the scheduler's final one].")
@click.option("--local/--servers", default=False, help="Run envs in this process instead of launching env servers.")
@click.option("--strategy", default=None,
              help="Agent strategy (default, plan, reflect, ...; `agentgym list strategies`) [default: agent.strategy].")
@click.option("--expert", default=None,
              help="Evaluate an expert registered by the env's plugin instead of a model (`agentgym list experts`).")
@click.option("--out", type=click.Path(), default=None, help="JSON file to write (a .md twin is written next to it).")
@click.option("--compare", is_flag=True, help="Print the given runs / eval JSON files side by side instead.")
@click.argument("args", nargs=-1)
def eval_(files: tuple[str, ...], model: str | None, split: str | None, k: int | None, tasks: int | None,
          temperature: float | None, max_turns: int | None, local: bool, strategy: str | None, expert: str | None,
          out: str | None, compare: bool, args: tuple[str, ...]) -> None:
    """Evaluate a model on an env's test split (Avg@k, Pass@k, success, turns, per category).

    ARGS are config overrides (key.path=value), or with --compare the runs / JSON files to compare.
    With a strategy that tries again after a failure (reflect), the table adds the share of tasks
    solved by each attempt.
    """
    from agentgym_core.evaluation import compare as compare_md
    from agentgym_core.evaluation import horizon_note, to_markdown

    if compare:
        if not args:
            raise click.UsageError("--compare needs run directories or eval JSON files, e.g. --compare runs/a runs/b")
        table = compare_md(comparison_inputs(args))
        click.echo(table)
        if out:
            Path(out).write_text(table + "\n", encoding="utf-8")
        return
    if expert and model:
        raise click.UsageError("--model and --expert each name what to evaluate: give one of them")
    if not model and not expert:
        raise click.UsageError("--model is required (a model folder, an alias, or a run directory), or --expert NAME")
    for a in args:
        if "=" not in a:
            raise click.UsageError(f"unexpected argument {a!r}: overrides look like key.path=value "
                                   f"(use --compare to compare runs){config_file_hint(a)}")
    from agentgym_core.config import load_config
    from agentgym_core.plugins import get_plugin_manager

    model_path, run_dir = resolve_model(model) if model else (f"expert:{expert}", None)
    if not files and run_dir is not None and (run_dir / "config.yaml").is_file():
        files = (str(run_dir / "config.yaml"),)
    if not files and not any(a.split("=", 1)[0] in ("env", "env.name") for a in args):
        raise click.UsageError("-c CONFIG is required (it names the env) unless --model is a run directory "
                               "(or name the env with env.name=NAME)")
    manager = get_plugin_manager()
    if strategy:  # the same as the override agent.strategy.name=NAME (options stay overrides)
        args = (f"agent.strategy.name={strategy}", *args)
    cfg = load_config(list(files), args, manager=manager)
    if "env" not in cfg:
        raise AgentGymError(f"config {', '.join(files)} has no env section; add env: {{name: ...}} to say what to evaluate on")
    if (k is not None and k < 1) or (tasks is not None and tasks < 0):
        raise click.UsageError("--k must be >= 1 and --tasks >= 0")
    from agentgym_core.assembly import checkpoint_scheduler, final_max_turns
    from agentgym_core.evaluation import plan_evaluation

    turns = max_turns or final_max_turns(checkpoint_scheduler(cfg, manager, model_path if model else None))
    plan = plan_evaluation(cfg.eval, cfg.rollout, turns, split=split, k=k, tasks=tasks, temperature=temperature)
    if plan.notice:
        click.echo(plan.notice, err=True)
    if expert:
        from agentgym_core.experts import build_env, evaluate_expert, load_expert

        name, play = load_expert(manager, cfg.env.name, expert)
        model_path = f"expert {name}"
        out_path = Path(out) if out else default_out(f"expert-{name}", None, plan.split, plan.k)
    else:
        out_path = Path(out) if out else default_out(model, run_dir, plan.split, plan.k, cfg.agent.strategy.name)
    dump = out_path.with_suffix(".jsonl")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    click.echo(f"Evaluating {model_path} on {cfg.env.name}/{plan.split}: k={plan.k}, horizon {plan.max_turns} turns"
               + ("" if expert else f", temperature {plan.temperature}, strategy {cfg.agent.strategy.name}"
                  + (f", repeat guard {plan.repeat_guard}" if plan.repeat_guard else "")), err=True)
    if expert:
        from agentgym_core.config import build_component

        env, spec = build_env(cfg, manager)
        # the rewards that judge (a model judge) score the expert's episodes too: summary["judged"]
        rewards = [(build_component(manager, "rewards", r), float(r.weight)) for r in cfg.rewards]
        try:
            summary, _ = evaluate_expert(play, env, spec, plan, name=name, dump_path=dump, rewards=rewards)
        finally:
            from agentgym_core.assembly import close_rewards

            try:
                env.close()
            finally:
                close_rewards(rewards)
    else:
        summary, _ = asyncio.run(_evaluate(cfg, model_path, plan, local=local, manager=manager, dump_path=dump))
    table = to_markdown(summary)
    click.echo(table)
    note = horizon_note(summary, expert=bool(expert))
    if note:
        click.echo(note, err=True)
    out_path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    out_path.with_suffix(".md").write_text(
        f"# Evaluation of `{model_path}` on {cfg.env.name}/{plan.split} (k={plan.k}, strategy "
        f"{'expert' if expert else cfg.agent.strategy.name})\n\n{table}\n", encoding="utf-8")
    click.echo(f"Wrote {out_path}, {out_path.with_suffix('.md')} and the episodes in {dump}", err=True)
    from agentgym_core.rundir import is_run_dir

    if out_path.parent.name == "eval" and is_run_dir(out_path.parent.parent):  # an evaluation of a sweep's run
        from agentgym_core.sweep import refresh

        for summary_file in refresh(out_path.parent.parent):
            click.echo(f"Updated the sweep summary {summary_file} (and its .md table)", err=True)
