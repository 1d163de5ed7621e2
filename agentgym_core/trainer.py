"""The trainer lifecycle every trainer plugin shares: core's :class:`Trainer` (a template method).

:meth:`Trainer.fit` is the whole job: take the run directory, build, restore a resumed run,
evaluate before training, run the steps (metrics, hooks, checkpoints at ``save_every``, the
non-finite and env-failure watchdogs, a progress line), evaluate after, and end cleanly on
Ctrl-C or an error (``on_run_end`` fires, env servers stop, the line says what ``--resume``
continues from). A trainer plugin supplies the parts that differ, in the order ``fit`` calls
them::

    init_processes()            process group (rank, world, main); default: one process
    check_settings()            errors that need the process count
    total_steps() -> int        default: trainer.steps
    build()                     model, optimizer, data, env parts (self.parts)
    restore(checkpoint) -> dict its trainer state (with "step" and "nonfinite")
    start()                     just before the first step (e.g. sync an engine)
    train_step(step) -> StepResult
    save(step, metrics, nonfinite) -> checkpoint path (main process) or None
    inference() (context)       the model in evaluation mode for an evaluation

Nothing here imports torch: trainers do. ``rl`` and ``sft`` are the bundled trainers.
"""
from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .errors import AgentGymError, ConfigError
from .options import config_from
from .trainer_parts import EnvFailing, StepResult, TensorBoardLog, TrainerConfig, TrainingDiverged, one_line

__all__ = ["EnvFailing", "StepResult", "TensorBoardLog", "Trainer", "TrainerConfig", "TrainingDiverged", "one_line"]


class Trainer:
    """Runs a whole training job from a resolved run config, and owns its run directory.

    :param config: the resolved run config (``DictConfig``).
    :param manager: the plugin manager, to build the other components by name.
    :param resume: a run directory to continue (``agentgym train --resume``), or None.
    :param options: the ``trainer`` section's own options, read into :attr:`Config`.

    See the module docstring for what a subclass supplies; everything else (the run
    directory, lifecycle hooks, evaluations, checkpoint cadence, Ctrl-C, resume) is here.
    """

    Config: type = TrainerConfig

    def __init__(self, config: Any, manager: Any, *, resume: Any = None, **options: Any) -> None:
        self.config = config
        self.manager = manager
        self.resume = resume
        self.options = options
        #: The ``trainer`` section as :attr:`Config`.
        self.settings: Any = config_from(self, options)
        #: Evaluation summaries of this run by tag (``before``, ``after``).
        self.summary: dict[str, Any] = {}
        self.run_dir: Any = None
        #: The checkpoint a resumed run continues from (None: a new run).
        self.checkpoint: Any = None
        self.rank, self.world, self.main = 0, 1, True
        #: The run's parts (env pool, engine, scheduler, ...) when the trainer plays episodes.
        self.parts: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None
        #: Set when a resumed run has nothing left to do (no model is loaded then).
        self.finished = False
        self.failed_steps = 0  # consecutive steps in which every episode failed on an env error
        self.tensorboard: Any = None
        self._bar: Any = None
        self._started = False  # on_run_start fired (so on_run_end fires too)

    # -- what a trainer plugin supplies --------------------------------------------------------
    def init_processes(self) -> None:
        """Set up the process group and :attr:`rank`, :attr:`world`, :attr:`main`. Default: one process."""

    def barrier(self) -> None:
        """Wait for every process. Default: one process, nothing to wait for."""

    def check_settings(self) -> None:
        """Raise :class:`~agentgym_core.errors.ConfigError` for settings that cannot work (after the run
        directory is open, before anything heavy loads)."""

    def total_steps(self) -> int:
        """How many steps the run has."""
        return int(self.settings.steps)

    def build(self) -> None:
        """Load the model and everything the steps need (not called when a resumed run is finished)."""
        raise NotImplementedError

    def restore(self, checkpoint: Path) -> dict[str, Any]:
        """Load the trainer state saved in *checkpoint* into the built trainer; return it (its ``step``
        is where training continues, ``nonfinite`` the non-finite streak)."""
        raise NotImplementedError

    def start(self) -> None:
        """Called once before the first step (and before the ``before`` evaluation)."""

    def train_step(self, step: int) -> StepResult:
        """Run step *step* (0-based)."""
        raise NotImplementedError

    def save(self, step: int, metrics: dict[str, float], nonfinite: int) -> Path | None:
        """Write the checkpoint after step *step*; return its folder on the main process."""
        raise NotImplementedError

    @contextlib.contextmanager
    def inference(self) -> Iterator[None]:
        """The model in evaluation mode while an evaluation plays episodes."""
        yield

    def close(self) -> None:
        """Release what :meth:`build` opened beyond :attr:`parts` (closed by the lifecycle)."""

    def export_model(self, checkpoint: Path) -> tuple[str, str]:
        """``(model path, how)``: what the next stage of a pipeline starts from, after this trainer's final
        *checkpoint*. Default: the checkpoint folder itself when it is a whole model (``config.json``)."""
        if (Path(checkpoint) / "config.json").is_file():
            return str(checkpoint), "full weights"
        raise AgentGymError(f"checkpoint {checkpoint} holds no whole model (config.json), and trainer "
                            f"{type(self).__name__} does not say how to export one (export_model): the next stage of "
                            "the pipeline cannot start from it")

    # -- the lifecycle ---------------------------------------------------------------------
    def fit(self) -> dict[str, Any]:
        """Train; return the last step's metrics plus ``eval_<tag>`` summaries."""
        cfg, hook = self.config, self.manager.hook
        self._setup()
        run_dir = str(self.run_dir.path)
        if self.finished:  # a finished run, already evaluated: said before any model is loaded
            self._resumed_config()
            self._nothing_to_train(_checkpoint_step(self.checkpoint))
            if self.main:
                print(f"resume: {run_dir}/eval/after.json already evaluates this checkpoint; not re-running it"
                      if cfg.eval.after else "resume: eval.after is false; nothing else to do",
                      file=sys.stderr, flush=True)
            return {}
        status, last, done_steps = "failed", {}, 0
        try:
            start, nonfinite = 0, 0
            if self.checkpoint is not None:
                state = self.restore(self.checkpoint)
                start, nonfinite = int(state["step"]), int(state.get("nonfinite", 0))
                self.run_dir.truncate_metrics(start)
            done_steps = start
            self._resumed_config()
            total = self.total_steps()
            if start >= total:
                self._nothing_to_train(start)
            self.start()
            hook.on_run_start(run_dir=run_dir, config=cfg, main=self.main)
            self._started = True
            if cfg.eval.before and start == 0 and not (self.run_dir.path / "eval" / "before.json").exists():
                self.summary["before"] = self.evaluate("before")
            self._bar = None if start >= total else self._progress(start, total)
            for step in range(start, total):
                last, nonfinite = self._step(step, nonfinite)
                done_steps = step + 1
                if self._bar is not None:
                    self._bar.update(1)
                    self._bar.set_postfix_str(self.postfix(last))
                every = self.settings.save_every
                if (every and (step + 1) % every == 0) or step + 1 == total:
                    path = self.save(step, last, nonfinite)
                    if self.main and path is not None:
                        hook.on_checkpoint(step=step, path=str(path), run_dir=run_dir)
                    self.barrier()
            if self._bar is not None:
                self._bar.close()
                self._bar = None
            if cfg.eval.after:  # (a finished run whose after.json is current returned above)
                self.summary["after"] = self.evaluate("after")
            status = "completed"
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        finally:
            if self._bar is not None:
                self._bar.close()
            if self._started:
                hook.on_run_end(run_dir=run_dir, metrics=dict(last), status=status, main=self.main)
            if self.tensorboard is not None:
                self.tensorboard.close()
            try:
                self.close()
            finally:
                self._close_loop()  # closes the env pool and the engine
            if status == "interrupted" and self.main:
                print(self._interrupted(done_steps), file=sys.stderr, flush=True)
        return {**last, **{f"eval_{k}": v for k, v in self.summary.items()}}

    def _setup(self) -> None:
        from .rundir import checkpoint_step

        self.init_processes()
        # Every process checks the run directory before the main one writes anything, so all agree.
        self.open_run_dir(main=self.main, barrier=self.barrier)
        self.tensorboard = TensorBoardLog(self.run_dir.path / "tb") if self.main else None
        self.check_settings()
        if self.checkpoint is not None and (checkpoint_step(self.checkpoint) or 0) >= self.total_steps():
            # Nothing to train; only a missing "after" evaluation of this checkpoint needs the model.
            self.finished = not self.config.eval.after or self.run_dir.evaluated("after", self.checkpoint)
            if self.finished:
                return
        self.build()

    def _step(self, step: int, nonfinite: int) -> tuple[dict[str, float], int]:
        result = self.train_step(step)
        if not result.updated:
            nonfinite += 1
            if nonfinite >= self.settings.max_nonfinite:
                lr = getattr(self.settings, "lr", None)
                raise TrainingDiverged(
                    f"step {step + 1}: the loss or gradient was non-finite in {nonfinite} steps in a row; lower "
                    f"trainer.lr{f' (now {lr})' if lr is not None else ''}, keep trainer.max_grad_norm > 0, or use "
                    "model.dtype: fp32")
        else:
            nonfinite = 0
        if self.main:
            self.run_dir.log(result.metrics)
            self.tensorboard.log(result.metrics)
            self.manager.hook.on_step_end(step=step, metrics=result.metrics, run_dir=str(self.run_dir.path))
        self.check_env_failures(step, result.trajectories)
        return result.metrics, nonfinite

    # -- evaluations ---------------------------------------------------------------------------
    def evaluate(self, tag: str) -> dict | None:
        """Held-out episodes (main process) with the same plan as ``agentgym eval``; writes ``eval/<tag>.json``.

        Same rules as ``agentgym eval --model RUN`` on the same checkpoint: the parts'
        ``final_max_turns``, and with ``eval.k > 1`` at temperature 0 sampling at
        ``rollout.temperature`` (said on stderr). Plays with :attr:`parts` (its engine on the
        current weights).
        """
        from .evaluation import evaluate, plan_evaluation

        cfg = self.config
        summary = None
        if self.main:
            if self.parts is None or self.parts.engine is None:
                raise AgentGymError(f"{type(self).__name__}: evaluation needs self.parts with an engine (build())")
            plan = plan_evaluation(cfg.eval, cfg.rollout, self.parts.final_max_turns)
            if plan.split not in self.parts.env.splits:
                raise ConfigError(f"eval.split {plan.split!r} is not a split of env {cfg.env.name!r} "
                                  f"(it has {', '.join(self.parts.env.splits)})")
            if plan.notice:
                print(f"eval {tag}: {plan.notice}", file=sys.stderr, flush=True)
            ckpt = self.run_dir.latest_checkpoint() if tag != "before" else None
            model = str(ckpt) if ckpt is not None else cfg.model.path
            with self.inference():
                summary, _ = self.run_async(evaluate(
                    self.parts, plan, model=model, dump_path=self.run_dir.path / "eval" / f"{tag}_trajectories.jsonl",
                    label=f"eval {tag}" if self.settings.progress else None))
            self.run_dir.write_json(f"eval/{tag}.json", summary)
        self.barrier()
        return summary

    # -- helpers for subclasses ------------------------------------------------------------------
    def run_async(self, coro: Any) -> Any:
        """Run *coro* on the trainer's event loop (made on first use; the env pool lives on it)."""
        if self.loop is None:
            self.loop = asyncio.new_event_loop()
        return self.loop.run_until_complete(coro)

    def assemble_parts(self) -> Any:
        """:func:`~agentgym_core.assembly.assemble` the run's parts on the trainer's loop (no engine yet)."""
        from .assembly import assemble

        self.parts = self.run_async(assemble(self.config, self.manager, local=self.settings.local_envs))
        return self.parts

    def say(self, line: str) -> None:
        """One line on stderr that does not break the progress bar."""
        if self._bar is not None:
            self._bar.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr, flush=True)

    def postfix(self, metrics: dict[str, float]) -> str:
        """The progress line's text for a step's metrics."""
        return " ".join(f"{k}={v:.4g}" for k, v in metrics.items() if k in ("loss", "lr") and isinstance(v, float))

    def check_env_failures(self, step: int, trajs: Sequence[Any]) -> None:
        """Say on stderr when episodes failed on env errors; stop when every episode keeps failing.

        Failed episodes get no weight in the update, so without this a broken env trains on
        nothing while the progress line shows only zeros.
        """
        if not trajs:
            return
        failed = [t for t in trajs if t.failed]
        if not failed:
            self.failed_steps = 0
            return
        name = self.config.env.name
        error = one_line(failed[0].error or "no error text", 200)
        if self.main:
            self.say(f"step {step + 1}: env {name!r} failed {len(failed)}/{len(trajs)} episodes: {error}")
        self.failed_steps = self.failed_steps + 1 if len(failed) == len(trajs) else 0
        if self.failed_steps >= self.settings.max_failed_steps:
            raise EnvFailing(
                f"env {name!r} failed every episode in {self.failed_steps} steps in a row "
                f"(trainer.max_failed_steps={self.settings.max_failed_steps}), so nothing was trained; last error: "
                f"{one_line(failed[-1].error or 'no error text', 300)}. Try the env by hand with "
                f"`agentgym env play {name}`; every episode's error is in {self.run_dir.path / 'trajectories'}")

    # -- the run directory -------------------------------------------------------------------
    def open_run_dir(self, *, main: bool = True, barrier: Any = None) -> Any:
        """Take the run directory (``run.output_dir/run.name``, or the one being resumed).

        A new run refuses a folder that holds an earlier run unless ``run.overwrite`` (then the
        main process deletes it, after *barrier* lets every process check first) and writes
        ``config.yaml``; a resumed run finds its latest checkpoint (:attr:`checkpoint`).
        """
        import shutil

        from .config import to_yaml
        from .rundir import RunDir, RunDirError

        cfg = self.config
        path = Path(self.resume) if self.resume else Path(cfg.run.output_dir) / cfg.run.name
        if self.resume:
            self.checkpoint = RunDir(path).latest_checkpoint()
            if self.checkpoint is None:
                raise RunDirError(f"--resume {path}: no complete checkpoint under checkpoints/; "
                                  "start a new run without --resume")
        else:
            clear = RunDir(path).check_new_run(bool(cfg.run.get("overwrite", False)))
            if barrier is not None:
                barrier()
            if clear and main:
                shutil.rmtree(path)
                print(f"run.overwrite=true: deleted the earlier run in {path}", file=sys.stderr, flush=True)
        self.run_dir = RunDir(path, writer=main)
        if main and not self.resume:
            self.run_dir.write_config(to_yaml(cfg))
        return self.run_dir

    def _resumed_config(self) -> None:
        from .config import to_yaml

        if self.resume and self.main and self.run_dir.save_config(to_yaml(self.config)):
            print(f"resume: saved the settings of this resume to {self.run_dir.path / 'config.yaml'} (the previous "
                  "config is in config.prev.yaml), so a later --resume continues with them", file=sys.stderr, flush=True)

    def _nothing_to_train(self, start: int) -> None:
        if self.main:
            run_dir = self.run_dir.path
            print(f"resume: nothing to train: {run_dir} is complete (its checkpoint {self.checkpoint.name} is at step "
                  f"{start}, trainer.steps is {self.total_steps()}). To train longer, give a larger trainer.steps, e.g. "
                  f"agentgym train --resume {run_dir} trainer.steps={2 * start}", file=sys.stderr, flush=True)

    def _interrupted(self, done: int) -> str:
        """The one line said on Ctrl-C: how far training got and what ``--resume`` would continue from."""
        ckpt = self.run_dir.latest_checkpoint()
        where = f"interrupted after {done} of {self.total_steps()} steps"
        if ckpt is not None:
            return f"{where}; last checkpoint: {ckpt.name} (agentgym train --resume {self.run_dir.path} continues from it)"
        return (f"{where}; no checkpoint yet (trainer.save_every={self.settings.save_every}), so there is nothing to "
                "resume: start again with run.overwrite=true")

    def _progress(self, start: int, total: int) -> Any:
        if not (self.main and self.settings.progress):
            return None
        try:
            from tqdm.auto import tqdm
        except ImportError:  # no progress bar: the metrics still go to metrics.jsonl
            return None
        return tqdm(total=total, initial=start, desc="train", unit="step", dynamic_ncols=True)

    def _close_loop(self) -> None:
        """Close the env pool, then end what is still running on the loop (an interrupted rollout's
        episodes) before closing it: a loop closed with pending tasks prints their tracebacks."""
        loop = self.loop
        if loop is None:
            return
        try:
            if self.parts is not None:
                loop.run_until_complete(self.parts.aclose())
        finally:
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()


def _checkpoint_step(ckpt: Path) -> int:
    from .rundir import checkpoint_step

    return checkpoint_step(ckpt) or 0
