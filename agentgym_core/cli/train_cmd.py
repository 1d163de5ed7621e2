"""``agentgym train -c CONFIG [key=value ...] [--num-processes N] [--resume RUN_DIR]``."""
from __future__ import annotations

import os
import subprocess
import sys

import click


@click.command(context_settings={"ignore_unknown_options": False})
@click.option("-c", "--config", "files", multiple=True, type=click.Path(), help="YAML file(s), merged in order.")
@click.option("--resume", "resume", type=click.Path(), default=None,
              help="Continue the run in RUN_DIR from its latest checkpoint (uses RUN_DIR/config.yaml).")
@click.option("--num-processes", "num_processes", type=int, default=1, show_default=True,
              help="Training processes on this machine (accelerate; CPU uses gloo).")
@click.option("--seeds", default=None, metavar="0,1,2",
              help="Train one run per seed, named <run.name>-s<seed> (ranges: 0-4); a summary table at the end.")
@click.option("--sweep", "sweeps", multiple=True, metavar="KEY=V1,V2",
              help="Also train every value of KEY (repeatable: every combination), e.g. trainer.lr=1e-3,3e-4.")
@click.option("--jobs", default=1, show_default=True, type=click.IntRange(min=1),
              help="With --seeds/--sweep: runs at a time (each then logs to <output_dir>/<run>.log).")
@click.argument("overrides", nargs=-1)
def train(files: tuple[str, ...], resume: str | None, num_processes: int, seeds: str | None,
          sweeps: tuple[str, ...], jobs: int, overrides: tuple[str, ...]) -> None:
    """Train an agent with RL: rollout, rewards, advantages, update, checkpoints in runs/<name>/.

    OVERRIDES are dotlist keys such as trainer.lr=1e-5 scheduler.rounds=[6,13,20].
    With --seeds or --sweep, the runs are trained one after another, each in its own directory.
    """
    from agentgym_core.errors import ConfigError

    if num_processes < 1:
        raise ConfigError(f"--num-processes must be >= 1, got {num_processes}")
    if jobs > 1 and not (seeds or sweeps):
        raise ConfigError("--jobs runs the runs of --seeds/--sweep side by side; give --seeds or --sweep too")
    if (seeds or sweeps) and resume:
        raise ConfigError("--seeds/--sweep start new runs and --resume continues one; resume each run on its own")
    if num_processes > 1 and "LOCAL_RANK" not in os.environ and not (seeds or sweeps):
        sys.exit(_launch(num_processes))
    from agentgym_core.config import build_component, load_config
    from agentgym_core.plugins import get_plugin_manager

    for a in overrides:
        if "=" not in a and a.endswith((".yaml", ".yml")):
            where = (f"{a!r} is a config file: pass it with -c, e.g. agentgym train -c {a}" if os.path.isfile(a)
                     else f"{a!r} looks like a config file but does not exist; config files go after -c")
            raise ConfigError(f"unexpected argument {a!r}: overrides look like key.path=value; {where}")
    manager = get_plugin_manager()
    if resume:
        saved = os.path.join(resume, "config.yaml")
        if not os.path.isfile(saved):
            raise ConfigError(f"--resume {resume}: no config.yaml there; pass the run directory (runs/<name>)")
        files = (saved, *files)
    elif not files and not overrides:
        raise ConfigError("agentgym train needs -c CONFIG (e.g. configs/quickstart.yaml) or --resume RUN_DIR")
    if seeds or sweeps:
        from agentgym_core.sweep import parse_seeds, run_sweep

        extra = ["--num-processes", str(num_processes)] if num_processes > 1 else []
        rows = run_sweep(files, overrides, parse_seeds(seeds) if seeds else None, sweeps, manager,
                         jobs=jobs, extra_args=extra, echo=click.echo)
        failed = [r["run"] for r in rows if r["status"] != "ok"]
        if failed:
            from agentgym_core.errors import AgentGymError

            raise AgentGymError(f"{len(failed)} of {len(rows)} sweep runs did not finish: {', '.join(failed)} "
                                "(their output is above)")
        return
    cfg = load_config(list(files), overrides, manager=manager)
    if "stages" in cfg:
        _pipeline(cfg, manager, resume)
        return
    if not resume:  # a run directory in use is refused before the trainer (torch, transformers) is imported
        from agentgym_core.rundir import RunDir

        RunDir(os.path.join(cfg.run.output_dir, cfg.run.name)).check_new_run(bool(cfg.run.get("overwrite", False)))
    trainer = build_component(manager, "trainers", cfg.trainer, cfg, manager, resume=resume)
    trainer.fit()
    end_process_group()  # (a process that failed exits at once instead: the launcher stops the others)
    if int(os.environ.get("RANK", "0")) != 0:
        return
    from agentgym_core.finish import finish_lines

    for line in finish_lines(getattr(trainer, "summary", {}), resume or os.path.join(cfg.run.output_dir, cfg.run.name),
                             manager):
        click.echo(line)


#: Seconds a process waits at the end of training for the others before it says which did not come.
END_TIMEOUT_S = 600.0


def end_process_group(timeout: float = END_TIMEOUT_S) -> None:
    """Leave a multi-process run together: every process waits for the others, then the process group
    is destroyed, before any exits. A process that left while another was still inside a collective
    (or tore its process group down at exit) could abort the other one; under load that happened.
    A process that does not arrive within *timeout* is named (gloo's monitored barrier) instead of
    hanging the others."""
    if "torch" not in sys.modules:
        return
    import datetime

    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return
    try:
        if dist.get_backend() == "gloo":
            dist.monitored_barrier(timeout=datetime.timedelta(seconds=timeout), wait_all_ranks=True)
        else:
            dist.barrier()
    except RuntimeError as exc:
        print(f"rank {dist.get_rank()}: waited {timeout:.0f} s at the end of training for the other processes; "
              f"{str(exc).splitlines()[0]}", file=sys.stderr, flush=True)
    finally:
        dist.destroy_process_group()


def _pipeline(cfg, manager, resume: str | None) -> None:
    """Train the stages of a pipeline config (``stages:``) and print each stage's held-out success."""
    from agentgym_core.pipeline import run_pipeline, summary_lines

    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        from agentgym_core.errors import ConfigError

        raise ConfigError("a pipeline (stages:) runs its stages one after another in one process; drop "
                          "--num-processes")
    stages = run_pipeline(cfg, manager, resume=resume, echo=lambda line: click.echo(line, err=True))
    for line in summary_lines(stages, resume or os.path.join(cfg.run.output_dir, cfg.run.name)):
        click.echo(line)


def _launch(n: int) -> int:
    """Re-run this command in *n* processes (torch.distributed.run; accelerate reads its env vars)."""
    cleaned, skip = [], False
    for a in sys.argv[1:]:
        if skip:
            skip = False
            continue
        if a == "--num-processes":
            skip = True
            continue
        if a.startswith("--num-processes="):
            continue
        cleaned.append(a)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={n}",
           "-m", "agentgym_core.cli.main", *cleaned]
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    return subprocess.call(cmd, env=env)
