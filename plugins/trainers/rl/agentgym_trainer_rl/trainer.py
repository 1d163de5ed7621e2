"""The ``rl`` trainer: collect (rollout) -> rewards -> advantages -> update -> log / checkpoint.

One process or many (``accelerate``; DDP): every rank plays its share of the step's task
groups with its own copy of the policy, gradients are averaged, and the main process writes
the run directory. The whole data flow is :meth:`RLTrainer.fit`.
"""
from __future__ import annotations

import asyncio
import dataclasses
import sys
import time
import zlib
from typing import Any, Optional

import torch

from agentgym_core.components import Trainer
from agentgym_core.config import to_yaml
from agentgym_core.errors import AgentGymError, ConfigError
from agentgym_core.rundir import checkpoint_step

from .algorithms import ALGORITHMS, EstimatorOptions
from .batch import build_batch
from .config import RLConfig, UpdateConfig
from .fsdp import FSDPStrategy
from .memory import check_run_fits, out_of_memory
from .policy import PolicyModule, apply_lora, enable_checkpointing, frozen_copy, load_lm, peft_quiet, plain_state_dict
from .reporting import TensorBoardLog, one_line, param_hash, postfix, step_metrics
from .state import ResumeError, TaskCursor, load_trainer_state, rng_state, set_rng_state, write_checkpoint
from .optim import make_optimizer
from .update import Updater, UpdateSettings


class TrainingDiverged(AgentGymError):
    """The loss stayed non-finite for too many steps in a row."""


class EnvFailing(AgentGymError):
    """Every episode failed on an env error for too many steps in a row."""


class RLTrainer(Trainer):
    Config = RLConfig

    def __init__(self, config: Any, manager: Any, *, resume: Optional[str] = None, **options: Any) -> None:
        super().__init__(config, manager, resume=resume, **options)
        #: The ``trainer`` section.
        self.settings = RLConfig(**options)
        #: Set by ``_setup`` when a resumed run has nothing left to do (no model is loaded then).
        self.finished = False
        self.failed_steps = 0  # consecutive steps in which every episode failed on an env error
        self._bar: Any = None

    # -- setup -------------------------------------------------------------------------------
    def _setup(self) -> None:
        from accelerate import Accelerator

        from agentgym_core.backend import resolve_backend

        cfg, tc = self.config, self.settings
        self.backend = resolve_backend(self.manager, cfg.backend)
        self.backend.setup()
        self.accelerator = Accelerator(cpu=self.backend.name == "cpu")
        self.rank, self.world = self.accelerator.process_index, self.accelerator.num_processes
        self.main = self.accelerator.is_main_process
        # Every process checks the run directory before the main one writes anything, so all agree.
        self.open_run_dir(main=self.main, barrier=self.accelerator.wait_for_everyone)
        self.tensorboard = TensorBoardLog(self.run_dir.path / "tb") if self.main else None
        episodes = cfg.rollout.tasks_per_step * cfg.rollout.group_size
        if cfg.rollout.tasks_per_step % self.world:
            raise ConfigError(f"rollout.tasks_per_step ({cfg.rollout.tasks_per_step}) must be divisible by the "
                              f"number of processes ({self.world}): each process plays whole task groups")
        if episodes // self.world < tc.mini_batches * tc.grad_accum:
            raise ConfigError(f"each process gets {episodes // self.world} episodes per step, fewer than "
                              f"trainer.mini_batches * trainer.grad_accum = {tc.mini_batches * tc.grad_accum}")
        if self.checkpoint is not None and (checkpoint_step(self.checkpoint) or 0) >= tc.steps:
            # Nothing to train; only a missing "after" evaluation of this checkpoint needs the model.
            self.finished = not cfg.eval.after or self.run_dir.evaluated("after", self.checkpoint)
            if self.finished:
                return
        check_run_fits(cfg, tc, self.accelerator.device, self.world, self.backend.supports_bf16())
        torch.manual_seed(cfg.run.seed + self.rank)
        self._build_model()
        self._build_components()

    def _build_model(self) -> None:
        cfg, tc = self.config, self.settings
        full_resume = self.checkpoint is not None and tc.finetune == "full"
        lm, self.tokenizer = load_lm(str(self.checkpoint) if full_resume else cfg.model.path, dtype="fp32",
                                     chat_template=cfg.model.chat_template)
        lm.to(self.accelerator.device)
        self.bf16 = cfg.model.dtype in ("auto", "bf16") and self.backend.supports_bf16()
        if tc.gradient_checkpointing:
            enable_checkpointing(lm)
        self.algorithm = ALGORITHMS[tc.algorithm]
        reference = None
        if tc.finetune == "lora":
            if self.checkpoint is not None:
                from peft import PeftModel

                with peft_quiet():
                    lm = PeftModel.from_pretrained(lm, str(self.checkpoint), is_trainable=True)
            else:
                lm = apply_lora(lm, tc.lora_r, tc.lora_alpha, tc.lora_dropout, tc.lora_targets, tc.lora_layers)
        elif tc.kl_coef > 0:
            ref_lm = lm if self.checkpoint is None else load_lm(cfg.model.path, dtype="fp32")[0].to(self.accelerator.device)
            reference = PolicyModule(frozen_copy(ref_lm))
        lm.train()
        policy = PolicyModule(lm, value_head=self.algorithm.needs_value).to(self.accelerator.device)
        self.fsdp = tc.strategy == "fsdp"
        if self.fsdp:  # shard before the optimizer sees the parameters: its state is sharded too
            self.dist: Any = FSDPStrategy(self.accelerator, bf16=self.bf16, offload=tc.fsdp_offload)
            self.dist.shard(policy)
            if reference is not None:
                self.dist.shard(reference, frozen=True)
        optimizer = make_optimizer([p for p in policy.parameters() if p.requires_grad], tc, self.accelerator.device)
        warmup = tc.warmup_steps
        self.lr_sched = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup) if warmup else 1.0)
        if self.fsdp:
            self.policy, self.optimizer = policy, optimizer
        else:
            self.policy, self.optimizer = self.accelerator.prepare(policy, optimizer)
            self.dist = self.accelerator
        self.module: PolicyModule = self.accelerator.unwrap_model(self.policy)
        # The update's options are the trainer config's fields of the same names (plus runtime ones).
        shared = {f.name: getattr(tc, f.name) for f in dataclasses.fields(UpdateConfig)}
        opts = UpdateSettings(**shared, bf16=self.bf16, device=str(self.accelerator.device))
        # A shared prefix reaches the other rows through the KV cache: gradient checkpointing drops the cache,
        # and FSDP, which gathers a layer's weights again for backward when gradients reach the layer's output,
        # never sees gradients that arrive through cached keys and values. Both run every row whole.
        opts.share_prefix = tc.share_prefix and not tc.gradient_checkpointing and not self.fsdp
        algo_opts = EstimatorOptions.from_config(tc)
        self.updater = Updater(self.policy, self.optimizer, self.algorithm, opts, algo_opts, self.dist, reference)

    def _build_components(self) -> None:
        from agentgym_core.assembly import assemble

        self.loop = asyncio.new_event_loop()
        self.parts = self.loop.run_until_complete(assemble(self.config, self.manager, local=self.settings.local_envs))
        if self.fsdp:  # the engine cannot run sharded layers: it keeps its own full copy, synced after updates
            engine_options = self.manager.registry("engines").get(self.config.engine.name).config_class()
            on_device = {"device": str(self.accelerator.device)} if "device" in getattr(
                engine_options, "__dataclass_fields__", {}) else {}  # (vLLM places itself)
            self.parts.load_engine(self.config.model.path, **on_device)
        else:  # the engine runs the live policy
            self.parts.load_engine(self.module.lm, self.tokenizer)
        self.engine, self.scheduler = self.parts.engine, self.parts.scheduler
        self.cursor = TaskCursor(list(self.parts.env.ids("train")), self.config.run.seed)

    # -- pieces of a step ------------------------------------------------------------------
    def _rollout(self, tasks: list[tuple[int, int]], horizon: int, step: int, seed: int) -> tuple[list, dict]:
        from agentgym_core.rollout.runner import rollout

        stats: dict[str, Any] = {}
        trajs = self.loop.run_until_complete(rollout(self.parts, tasks, max_turns=horizon, step=step, seed=seed,
                                                     stats=stats))
        return trajs, stats

    def _sync_engine(self) -> float:
        """Give the engine the policy's current weights; returns the seconds it took.

        An engine with its own copy of the model (vLLM) gets them as a state dict after every
        update; without this it would keep sampling from the weights it started with. An
        engine running the live model only drops what it cached under the old weights.
        """
        start = time.perf_counter()
        if getattr(self.engine, "shares_weights", False):
            self.engine.update_weights(self.module.lm)
        elif self.fsdp:  # every process gathers the full weights (collective) and loads its engine's copy
            full = self.dist.full_state_dict(self.module.lm, main_only=False)
            self.engine.update_weights(plain_state_dict(self.module.lm, full))
        else:
            self.engine.update_weights(plain_state_dict(self.module.lm))
        return time.perf_counter() - start

    def evaluate(self, tag: str) -> Optional[dict]:
        """Held-out episodes (main process) with the same plan as ``agentgym eval``; writes ``eval/<tag>.json``.

        Same rules as ``agentgym eval --model RUN`` on the same checkpoint: the scheduler's
        final horizon, and with ``eval.k > 1`` at temperature 0 sampling at
        ``rollout.temperature`` (said on stderr).
        """
        from agentgym_core.evaluation import evaluate, plan_evaluation

        cfg = self.config
        summary = None
        if self.main:
            plan = plan_evaluation(cfg.eval, cfg.rollout, self.scheduler)
            if plan.split not in self.parts.env.splits:
                raise ConfigError(f"eval.split {plan.split!r} is not a split of env {cfg.env.name!r} "
                                  f"(it has {', '.join(self.parts.env.splits)})")
            if plan.notice:
                print(f"eval {tag}: {plan.notice}", file=sys.stderr, flush=True)
            ckpt = self.run_dir.latest_checkpoint() if tag != "before" else None
            model = str(ckpt) if ckpt is not None else cfg.model.path
            self.module.eval()
            summary, _ = self.loop.run_until_complete(evaluate(
                self.parts, plan, model=model, dump_path=self.run_dir.path / "eval" / f"{tag}_trajectories.jsonl",
                label=f"eval {tag}" if self.settings.progress else None))
            self.module.train()
            self.run_dir.write_json(f"eval/{tag}.json", summary)
        self.accelerator.wait_for_everyone()
        return summary

    def _save(self, step: int, horizon: int, last: dict[str, float], nonfinite: int) -> None:
        from accelerate.utils import gather_object

        rngs = gather_object([rng_state()])
        # Each rank's trainable weights, hashed: DDP keeps them identical; a mismatch means desync.
        checksums = gather_object([param_hash(self.dist.full_state_dict(self.module, main_only=False) if self.fsdp
                                              else self.module)])
        state = {
            "step": step + 1, "horizon": horizon, "algorithm": self.settings.algorithm, "world_size": self.world,
            "strategy": self.settings.strategy, "scheduler": self.scheduler.state_dict(),
            "cursor": self.cursor.state_dict(), "lr_scheduler": self.lr_sched.state_dict(), "rng": rngs,
            "nonfinite": nonfinite, "metrics": last, "param_sha256": checksums, "updater": self.updater.state_dict(),
        }
        if self.fsdp:  # every process writes its shard (exact resume); the main one a consolidated HF folder
            tmp = self.run_dir.checkpoint_tmp(step + 1, create=self.main)
            self.accelerator.wait_for_everyone()
            self.dist.save_sharded(self.policy, self.optimizer, tmp / "sharded")
            weights = self.dist.full_state_dict(self.module.lm)
            self.accelerator.wait_for_everyone()
            if self.main:
                write_checkpoint(tmp, self.module.lm, self.tokenizer, state, weights=weights)
                path = self.run_dir.commit_checkpoint(step + 1, self.settings.keep_checkpoints)
        elif self.main:
            state["optimizer"] = self.optimizer.state_dict()
            state["value_head"] = self.module.value_head.state_dict() if self.module.value_head is not None else None
            path = self.run_dir.save_checkpoint(
                step + 1, lambda folder: write_checkpoint(folder, self.module.lm, self.tokenizer, state),
                self.settings.keep_checkpoints)
        if self.main:
            self.manager.hook.on_checkpoint(step=step, path=str(path), run_dir=str(self.run_dir.path))
        self.accelerator.wait_for_everyone()

    def _restore(self) -> tuple[int, int]:
        state = load_trainer_state(self.checkpoint / "trainer_state.pt")
        if state["world_size"] != self.world:
            raise ResumeError(f"checkpoint {self.checkpoint} was written by {state['world_size']} processes, "
                              f"this run has {self.world}; resume with --num-processes {state['world_size']}")
        if state.get("strategy", "ddp") != self.settings.strategy:
            raise ResumeError(f"checkpoint {self.checkpoint} was written with trainer.strategy={state.get('strategy', 'ddp')}, "
                              f"this run has {self.settings.strategy}; resume with the same strategy")
        if self.fsdp:
            self.dist.load_sharded(self.policy, self.optimizer, self.checkpoint / "sharded")
        else:
            self.optimizer.load_state_dict(state["optimizer"])
        self.lr_sched.load_state_dict(state["lr_scheduler"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.cursor.load_state_dict(state["cursor"])
        if state.get("value_head") is not None:  # (FSDP: in the sharded state)
            self.module.value_head.load_state_dict(state["value_head"])
        self.updater.load_state_dict(state.get("updater") or {})
        set_rng_state(state["rng"][self.rank])
        self.run_dir.truncate_metrics(state["step"])
        return int(state["step"]), int(state.get("nonfinite", 0))

    # -- the loop ----------------------------------------------------------------------------
    def fit(self) -> dict[str, Any]:
        self._setup()
        cfg, tc, hook = self.config, self.settings, self.manager.hook
        run_dir = str(self.run_dir.path)
        if self.finished:  # a finished run, already evaluated: said before any model is loaded
            self._resumed_config()
            self._nothing_to_train(checkpoint_step(self.checkpoint) or 0)
            if self.main:
                print(f"resume: {run_dir}/eval/after.json already evaluates this checkpoint; not re-running it"
                      if cfg.eval.after else "resume: eval.after is false; nothing else to do",
                      file=sys.stderr, flush=True)
            return {}
        start, nonfinite = self._restore() if self.checkpoint is not None else (0, 0)
        self._resumed_config()
        done = start >= tc.steps
        if done:
            self._nothing_to_train(start)
        self._sync_engine()  # a resumed LoRA run: an engine with its own weights has the base model's
        hook.on_run_start(run_dir=run_dir, config=cfg, main=self.main)
        status, last, done_steps = "failed", {}, start
        try:
            if cfg.eval.before and start == 0 and not (self.run_dir.path / "eval" / "before.json").exists():
                self.summary["before"] = self.evaluate("before")
            self._bar = None if done else self._progress(start)
            for step in range(start, tc.steps):
                last, nonfinite = self._step(step, nonfinite)
                done_steps = step + 1
                if self._bar is not None:
                    self._bar.update(1)
                    self._bar.set_postfix_str(postfix(last))
                if (tc.save_every and (step + 1) % tc.save_every == 0) or step + 1 == tc.steps:
                    self._save(step, int(last["horizon"]), last, nonfinite)
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
            hook.on_run_end(run_dir=run_dir, metrics=dict(last), status=status, main=self.main)
            if self.tensorboard is not None:
                self.tensorboard.close()
            self._close_loop()  # closes the env pool and the engine
            if status == "interrupted" and self.main:
                print(self._interrupted(done_steps), file=sys.stderr, flush=True)
        return {**last, **{f"eval_{k}": v for k, v in self.summary.items()}}

    def _resumed_config(self) -> None:
        if self.resume and self.main and self.run_dir.save_config(to_yaml(self.config)):
            print(f"resume: saved the settings of this resume to {self.run_dir.path / 'config.yaml'} (the previous "
                  "config is in config.prev.yaml), so a later --resume continues with them", file=sys.stderr, flush=True)

    def _nothing_to_train(self, start: int) -> None:
        if self.main:
            run_dir = self.run_dir.path
            print(f"resume: nothing to train: {run_dir} is complete (its checkpoint {self.checkpoint.name} is at step "
                  f"{start}, trainer.steps is {self.settings.steps}). To train longer, give a larger trainer.steps, e.g. "
                  f"agentgym train --resume {run_dir} trainer.steps={2 * start}", file=sys.stderr, flush=True)

    def _close_loop(self) -> None:
        """Close the env pool, then end what is still running on the loop (an interrupted rollout's
        episodes) before closing it: a loop closed with pending tasks prints their tracebacks."""
        loop = self.loop
        try:
            loop.run_until_complete(self.parts.aclose())
        finally:
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    def _interrupted(self, done: int) -> str:
        """The one line said on Ctrl-C: how far training got and what ``--resume`` would continue from."""
        ckpt = self.run_dir.latest_checkpoint()
        where = f"interrupted after {done} of {self.settings.steps} steps"
        if ckpt is not None:
            return f"{where}; last checkpoint: {ckpt.name} (agentgym train --resume {self.run_dir.path} continues from it)"
        return (f"{where}; no checkpoint yet (trainer.save_every={self.settings.save_every}), so there is nothing to "
                "resume: start again with run.overwrite=true")

    def _step(self, step: int, nonfinite: int) -> tuple[dict[str, float], int]:
        from accelerate.utils import gather_object

        cfg, tc = self.config, self.settings
        t0 = time.perf_counter()
        horizon = int(self.scheduler.max_turns(step))
        task_ids = self.cursor.take(cfg.rollout.tasks_per_step)  # same on every rank
        mine = [(tid, g) for g, tid in enumerate(task_ids) if g % self.world == self.rank]
        tasks = [(tid, g) for tid, g in mine for _ in range(cfg.rollout.group_size)]
        seed = zlib.crc32(f"{cfg.run.seed}/{step}/{self.rank}".encode())
        self.module.eval()
        try:
            trajs, stats = self._rollout(tasks, horizon, step + 1, seed=seed)
        except torch.OutOfMemoryError:
            raise out_of_memory(f"the rollout of step {step + 1}", self.accelerator.device, tc) from None
        self.module.train()
        t1 = time.perf_counter()
        self.parts.score(trajs)
        for t in trajs:
            t.step = step + 1
        everything = gather_object(trajs) if self.world > 1 else trajs
        self.manager.hook.on_rollout_end(step=step, trajectories=trajs, run_dir=str(self.run_dir.path))
        if cfg.rollout.dump_trajectories:
            self.run_dir.dump_trajectories(everything, step + 1)
        batch = build_batch(trajs, pad_id=self.tokenizer.pad_token_id or 0)
        try:
            train = self.updater.step(batch)
        except torch.OutOfMemoryError:
            raise out_of_memory(f"the update of step {step + 1}", self.accelerator.device, tc) from None
        self.lr_sched.step()
        sync = self._sync_engine() if train["updates"] else 0.0
        t2 = time.perf_counter()
        if self.world > 1:
            gathered = gather_object([train])
            train = {k: sum(g[k] for g in gathered) / len(gathered) for k in train}
        if train["updates"] == 0:
            nonfinite += 1
            if nonfinite >= tc.max_nonfinite:
                raise TrainingDiverged(
                    f"step {step + 1}: the loss or gradient was non-finite in {nonfinite} steps in a row; lower "
                    f"trainer.lr (now {tc.lr}), keep trainer.max_grad_norm > 0, or use model.dtype: fp32")
        else:
            nonfinite = 0
        metrics = step_metrics(step, horizon, everything, train, stats, t0, t1, t2, self.world)
        metrics["lr"] = self.lr_sched.get_last_lr()[0]
        metrics["weight_sync_time_s"] = sync
        metrics.update(self.updater.extra_metrics(train, self.world))  # lone_groups, clipfrac_lower, kl_coef
        self.scheduler.observe(step, metrics)
        if self.main:
            self.run_dir.log(metrics)
            self.tensorboard.log(metrics)
            self.manager.hook.on_step_end(step=step, metrics=metrics, run_dir=str(self.run_dir.path))
        self._check_env_failures(step, everything)
        return metrics, nonfinite

    def _check_env_failures(self, step: int, trajs: list) -> None:
        """Say on stderr when episodes failed on env errors; stop when every episode keeps failing.

        Failed episodes get no weight in the update, so without this a broken env trains on
        nothing while the progress line shows only zeros.
        """
        failed = [t for t in trajs if t.failed]
        if not failed:
            self.failed_steps = 0
            return
        name = self.config.env.name
        error = one_line(failed[0].error or "no error text", 200)
        if self.main:
            self._say(f"step {step + 1}: env {name!r} failed {len(failed)}/{len(trajs)} episodes: {error}")
        self.failed_steps = self.failed_steps + 1 if len(failed) == len(trajs) else 0
        if self.failed_steps >= self.settings.max_failed_steps:
            raise EnvFailing(
                f"env {name!r} failed every episode in {self.failed_steps} steps in a row "
                f"(trainer.max_failed_steps={self.settings.max_failed_steps}), so nothing was trained; last error: "
                f"{one_line(failed[-1].error or 'no error text', 300)}. Try the env by hand with "
                f"`agentgym env play {name}`; every episode's error is in {self.run_dir.path / 'trajectories'}")

    def _say(self, line: str) -> None:
        """One line on stderr that does not break the progress bar."""
        if self._bar is not None:
            self._bar.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr, flush=True)

    def _progress(self, start: int) -> Any:
        if not (self.main and self.settings.progress):
            return None
        from tqdm.auto import tqdm

        return tqdm(total=self.settings.steps, initial=start, desc="train", unit="step", dynamic_ncols=True)
