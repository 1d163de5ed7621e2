"""``agentgym rollout``: play N episodes of an env with a model; print success, turns and speed.

    agentgym rollout -c configs/quickstart.yaml --episodes 16 --local
    agentgym rollout -c my.yaml model.path=./my-model rollout.temperature=0.7 --dump out.jsonl

The way to sanity-check a setup (env, model, chat template, action parsing) before training.
"""
from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import click

from agentgym_core.errors import AgentGymError


async def play(cfg: Any, manager: Any, *, episodes: int, local: bool, max_turns: int | None,
               temperature: float | None, split: str, dump: str | None) -> tuple[list, dict]:
    """Run the episodes; return ``(trajectories, stats)``."""
    from agentgym_core.assembly import assemble
    from agentgym_core.rollout.runner import rollout

    if "env" not in cfg:
        raise AgentGymError("the config has no env section; add `env: {name: <env>}` or pass env.name=<env>")
    parts = await assemble(cfg, manager, local=local)
    try:
        horizon = max_turns or int(parts.scheduler.max_turns(0))
        split_ids = _split_ids(parts.env, split)
        ids = [split_ids[i % len(split_ids)] for i in range(episodes)]
        parts.load_engine(cfg.model.path)
        stats: dict[str, Any] = {}
        trajectories = await rollout(parts, [(tid, i) for i, tid in enumerate(ids)], max_turns=horizon,
                                     temperature=temperature, dump_path=dump, stats=stats)
    finally:
        await parts.aclose()
    stats["max_turns"] = horizon
    return trajectories, stats


def _split_ids(env: Any, split: str) -> Any:
    if split not in env.splits or not len(env.splits[split]):
        choices = " or ".join(f"--split {k}" for k in env.splits) or "--split train"
        raise AgentGymError(f"env {env.name!r} has no split {split!r} with task ids (it has: "
                            f"{', '.join(env.splits) or 'none'}); pass {choices}")
    return env.splits[split]


def summarize(trajectories: list, stats: dict[str, Any]) -> dict[str, Any]:
    n = max(1, len(trajectories))
    generated = sum(t.num_generated for t in trajectories)
    unique = sum(len(t.token_ids) for t in trajectories)
    reasons: dict[str, int] = {}
    for t in trajectories:
        reasons[t.end_reason] = reasons.get(t.end_reason, 0) + 1
    wall = stats.get("wall_seconds", 0.0) or 1e-9
    return {
        "episodes": len(trajectories),
        "success_rate": sum(t.success for t in trajectories) / n,
        "mean_turns": sum(t.num_turns for t in trajectories) / n,
        "mean_score": sum(t.score for t in trajectories) / n,
        "generated_tokens": generated,
        "tokens_per_second": generated / wall,
        "wall_seconds": wall,
        "prefill_ratio": sum(t.prefill_tokens for t in trajectories) / max(1, unique),
        "parse_errors": sum(1 for t in trajectories for turn in t.turns if turn.parse_error),
        "failed": sum(t.failed for t in trajectories),
        "end_reasons": reasons,
        "template_fallback": any(t.template_fallback for t in trajectories),
    }


@click.command("rollout")
@click.option("-c", "--config", "files", multiple=True, type=click.Path(), required=True, help="Run config YAML(s).")
@click.option("--episodes", "-n", type=int, default=8, show_default=True, help="Episodes to play.")
@click.option("--local/--servers", default=False, help="Run envs in this process instead of launching env servers.")
@click.option("--max-turns", type=int, default=None, help="Horizon per episode [default: the scheduler's at step 0].")
@click.option("--temperature", type=float, default=None, help="Sampling temperature [default: rollout.temperature].")
@click.option("--split", default="train", show_default=True, help="Env split the task ids come from.")
@click.option("--dump", type=click.Path(), default=None, help="Write the trajectories as JSONL to this file.")
@click.option("--show", type=int, default=1, show_default=True, help="Print the text of this many episodes.")
@click.argument("overrides", nargs=-1)
def rollout(files: tuple[str, ...], episodes: int, local: bool, max_turns: int | None, temperature: float | None,
            split: str, dump: str | None, show: int, overrides: tuple[str, ...]) -> None:
    """Play episodes of the config's env with its model; print success rate, mean turns and tokens/s.

    OVERRIDES are config overrides (key.path=value).
    """
    from agentgym_core.config import load_config
    from agentgym_core.plugins import get_plugin_manager

    if episodes < 1:
        raise AgentGymError("--episodes must be >= 1")
    if dump and Path(dump).suffix != ".jsonl":
        raise AgentGymError(f"--dump {dump!r}: give a .jsonl file name")
    manager = get_plugin_manager()
    cfg = load_config(list(files), list(overrides), manager=manager)
    start = time.perf_counter()
    trajectories, stats = asyncio.run(play(cfg, manager, episodes=episodes, local=local, max_turns=max_turns,
                                           temperature=temperature, split=split, dump=dump))
    s = summarize(trajectories, stats)
    for t in trajectories[: max(0, show)]:
        click.echo(f"--- episode {t.episode_id} (task {t.task_id}): {t.end_reason}, {t.num_turns} turns, score {t.score:g}")
        for k, turn in enumerate(t.turns):
            click.echo(f"[{k}] model: {turn.text.strip()[:300]}")
            click.echo(f"    action: {turn.action!r}" + (f"  (parse error: {turn.parse_error})" if turn.parse_error else ""))
            click.echo(f"    env: {turn.observation.strip()[:300]}")
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(s["end_reasons"].items()))
    click.echo(
        f"env {cfg.env.name} | model {cfg.model.path} | {s['episodes']} episodes, max {stats['max_turns']} turns\n"
        f"success rate {s['success_rate']:.1%} | mean turns {s['mean_turns']:.2f} | mean score {s['mean_score']:.3f}\n"
        f"{s['generated_tokens']} generated tokens in {s['wall_seconds']:.1f}s: {s['tokens_per_second']:.1f} tokens/s "
        f"(prefilled/unique tokens {s['prefill_ratio']:.2f}, mean batch {stats.get('mean_batch', 0):.1f})\n"
        f"end reasons: {reasons} | parse errors {s['parse_errors']} | failed {s['failed']}"
        + (" | chat template fallback used" if s["template_fallback"] else "")
        + f" | total {time.perf_counter() - start:.1f}s"
    )
    if dump:
        click.echo(f"trajectories written to {dump}")
