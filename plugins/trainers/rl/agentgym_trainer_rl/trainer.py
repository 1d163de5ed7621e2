"""The ``rl`` trainer: collect (rollout) -> rewards -> advantages -> update -> log / checkpoint.

One process or many (``accelerate``; DDP): every rank plays its share of the step's task
groups with its own copy of the policy, gradients are averaged, and the main process writes
the run directory. The lifecycle (run directory, evaluations, checkpoint cadence, hooks,
Ctrl-C, resume) is core's :class:`~agentgym_core.trainer.Trainer`; this class builds the
policy and runs a step: :meth:`RLTrainer.train_step` is the whole data flow.
"""
from __future__ import annotations

import contextlib
import dataclasses
import time
import zlib
from pathlib import Path
from typing import Any, Iterator, Optional

import torch

from agentgym_core import ConfigError, EnvFailing, StepResult, Trainer, TrainingDiverged

from .algorithms import EstimatorOptions
from .asynchronous import async_metrics, load_pending, publish_weights, save_pending, take_batch
from .batch import build_batch
from .config import RLConfig, UpdateConfig
from .fsdp import FSDPStrategy
from .memory import check_run_fits, out_of_memory
from .optim import make_optimizer
from .policy import PolicyModule, engine_copy, frozen_copy, load_lm, plain_state_dict
from .registry import ESTIMATORS
from .reporting import param_hash, postfix, step_metrics
from .sampling import SignalWatch, informative_groups, keep_groups
from .state import ResumeError, TaskCursor, load_trainer_state, rng_state, set_rng_state, write_checkpoint
from .update import Updater, UpdateSettings

__all__ = ["EnvFailing", "RLTrainer", "TrainingDiverged"]


class RLTrainer(Trainer):
    Config = RLConfig

    def __init__(self, config: Any, manager: Any, *, resume: Optional[str] = None, **options: Any) -> None:
        super().__init__(config, manager, resume=resume, **options)
        self.signal = SignalWatch(self.settings.algorithm, rewards=[r.name for r in self.config.rewards])
        #: The rollout worker of an asynchronous run (trainer.max_staleness > 0), started at the first step.
        self.worker: Any = None
        self.pending: dict = {}  # batches a resumed pipelined run played before its checkpoint

    # -- setup -------------------------------------------------------------------------------
    def init_processes(self) -> None:
        from accelerate import Accelerator

        from agentgym_core import resolve_backend

        self.backend = resolve_backend(self.manager, self.config.backend)
        self.backend.setup()
        self.accelerator = Accelerator(cpu=self.backend.name == "cpu")
        self.rank, self.world = self.accelerator.process_index, self.accelerator.num_processes
        self.main = self.accelerator.is_main_process

    def barrier(self) -> None:
        self.accelerator.wait_for_everyone()

    def check_settings(self) -> None:
        cfg, tc = self.config, self.settings
        episodes = cfg.rollout.tasks_per_step * cfg.rollout.group_size
        if cfg.rollout.tasks_per_step % self.world:
            raise ConfigError(f"rollout.tasks_per_step ({cfg.rollout.tasks_per_step}) must be divisible by the "
                              f"number of processes ({self.world}): each process plays whole task groups")
        if episodes // self.world < tc.mini_batches * tc.grad_accum:
            raise ConfigError(f"each process gets {episodes // self.world} episodes per step, fewer than "
                              f"trainer.mini_batches * trainer.grad_accum = {tc.mini_batches * tc.grad_accum}")
        if tc.max_staleness and cfg.engine.name != "hf":
            raise ConfigError(f"trainer.max_staleness > 0 gives the rollout worker its own copy of the policy in an hf "
                              f"engine; engine.name={cfg.engine.name!r} would load its weights from the model path, "
                              "which the asynchronous trainer does not do yet: use engine.name=hf, or "
                              "trainer.max_staleness=0")
        if tc.dynamic_sampling and self.world > 1:
            raise ConfigError("trainer.dynamic_sampling runs in one process for now (each process would refill its "
                              "own groups and the step sizes would differ): train with --num-processes 1 or "
                              "trainer.dynamic_sampling=false")

    def build(self) -> None:
        cfg, tc = self.config, self.settings
        check_run_fits(cfg, tc, self.accelerator.device, self.world, self.backend.supports_bf16())
        torch.manual_seed(cfg.run.seed + self.rank)
        self._build_model()
        self._build_components()

    def _build_model(self) -> None:
        from agentgym_hf.training import enable_checkpointing, warmup_schedule, with_adapters

        cfg, tc = self.config, self.settings
        full_resume = self.checkpoint is not None and tc.finetune == "full"
        lm, self.tokenizer = load_lm(str(self.checkpoint) if full_resume else cfg.model.path, dtype="fp32",
                                     chat_template=cfg.model.chat_template)
        lm.to(self.accelerator.device)
        self.bf16 = cfg.model.dtype in ("auto", "bf16") and self.backend.supports_bf16()
        #: The hf engine decodes in bf16 from a copy of the policy (the update autocasts the fp32
        #: master weights to bf16; sampling from them directly would run in fp32). FSDP's engine
        #: loads its own copy in the model's dtype anyway.
        self.bf16_engine_copy = self.bf16 and cfg.engine.name == "hf" and tc.strategy != "fsdp"
        if tc.gradient_checkpointing:
            enable_checkpointing(lm)
        self.algorithm = ESTIMATORS.get(tc.algorithm)
        reference = None
        if tc.finetune == "lora":
            lm = with_adapters(lm, tc, self.checkpoint)
        elif tc.kl_coef > 0:
            ref_lm = lm if self.checkpoint is None else load_lm(cfg.model.path, dtype="fp32")[0].to(self.accelerator.device)
            reference = PolicyModule(frozen_copy(ref_lm))
        lm.train()
        policy = PolicyModule(lm, value_head=self.algorithm.needs_critic).to(self.accelerator.device)
        self.fsdp = tc.strategy == "fsdp"
        if self.fsdp:  # shard before the optimizer sees the parameters: its state is sharded too
            self.dist: Any = FSDPStrategy(self.accelerator, bf16=self.bf16, offload=tc.fsdp_offload)
            self.dist.shard(policy)
            if reference is not None:
                self.dist.shard(reference, frozen=True)
        optimizer = make_optimizer([p for p in policy.parameters() if p.requires_grad], tc, self.accelerator.device)
        self.lr_sched = warmup_schedule(optimizer, tc.warmup_steps)
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
        self.assemble_parts()
        if self.fsdp:  # the engine cannot run sharded layers: it keeps its own full copy, synced after updates
            self.parts.load_engine(self.config.model.path, device=str(self.accelerator.device))  # (vLLM places itself)
        elif self.bf16_engine_copy:  # bf16 decoding from the fp32 master weights: a copy, synced after updates
            self.parts.load_engine(engine_copy(self.module.lm, torch.bfloat16), self.tokenizer, own_weights=True)
        else:  # the engine runs the live policy
            self.parts.load_engine(self.module.lm, self.tokenizer)
        self.engine, self.scheduler = self.parts.engine, self.parts.scheduler
        self.cursor = TaskCursor(list(self.parts.env.ids("train")), self.config.run.seed)

    def start(self) -> None:
        self._sync_engine()  # a resumed LoRA run: an engine with its own weights has the base model's

    def export_model(self, checkpoint: Path) -> tuple[str, str]:
        from agentgym_hf.training import export_checkpoint

        return export_checkpoint(checkpoint)  # LoRA adapters merged for the next stage of a pipeline

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()

    @contextlib.contextmanager
    def inference(self) -> Iterator[None]:
        if self.worker is not None:  # the trainer's own engine (evaluations) was not kept current step by step
            self._sync_engine()
        self.module.eval()
        try:
            yield
        finally:
            self.module.train()

    def postfix(self, metrics: dict[str, float]) -> str:
        return postfix(metrics)

    # -- pieces of a step ------------------------------------------------------------------
    def _rollout(self, tasks: list[tuple[int, int]], horizon: int, step: int, seed: int) -> tuple[list, dict]:
        from agentgym_core.rollout import rollout

        stats: dict[str, Any] = {}
        trajs = self.run_async(rollout(self.parts, tasks, max_turns=horizon, step=step, seed=seed, stats=stats))
        return trajs, stats

    def _sync_engine(self) -> float:
        """Give the engine the policy's current weights; returns the seconds it took.

        An engine with its own copy of the model (vLLM) gets them as a state dict after every
        update; without this it would keep sampling from the weights it started with. An
        engine running the live model only drops what it cached under the old weights.
        """
        start = time.perf_counter()
        if self.engine.shares_weights:
            self.engine.update_weights(self.module.lm)
        elif self.fsdp:  # every process gathers the full weights (collective) and loads its engine's copy
            full = self.dist.full_state_dict(self.module.lm, main_only=False)
            self.engine.update_weights(plain_state_dict(self.module.lm, full))
        else:  # (only the adapted layers' weights change in a LoRA run: the rest of the engine's copy is current)
            lora = self.settings.finetune == "lora" and self.bf16_engine_copy
            self.engine.update_weights(plain_state_dict(self.module.lm, adapted_only=lora))
        return time.perf_counter() - start

    def save(self, step: int, last: dict[str, float], nonfinite: int) -> Optional[Path]:
        from accelerate.utils import gather_object

        # A pipelined run has played the next max_staleness batches with weights older than this checkpoint's:
        # they go into it (each rank its own), so a resume trains on exactly them.
        ahead = self.worker.pending_from(step + 1) if self.worker is not None and self.settings.async_mode == "pipelined" \
            else {}
        ahead_all = gather_object([ahead]) if self.world > 1 else [ahead]

        rngs = gather_object([rng_state()])
        # Each rank's trainable weights, hashed: DDP keeps them identical; a mismatch means desync.
        checksums = gather_object([param_hash(self.dist.full_state_dict(self.module, main_only=False) if self.fsdp
                                              else self.module)])
        state = {
            "step": step + 1, "horizon": int(last["horizon"]), "algorithm": self.settings.algorithm,
            "world_size": self.world, "strategy": self.settings.strategy, "scheduler": self.scheduler.state_dict(),
            "cursor": self.cursor.state_dict(), "lr_scheduler": self.lr_sched.state_dict(), "rng": rngs,
            "nonfinite": nonfinite, "metrics": last, "param_sha256": checksums, "updater": self.updater.state_dict(),
        }
        path = None
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
                step + 1, lambda folder: self._write(folder, state, ahead_all), self.settings.keep_checkpoints)
        return path

    def _write(self, folder: Path, state: dict, ahead: list[dict]) -> None:
        write_checkpoint(folder, self.module.lm, self.tokenizer, state)
        if self.settings.max_staleness:
            for rank, pending in enumerate(ahead):
                save_pending(folder, pending, rank)

    def restore(self, checkpoint: Path) -> dict[str, Any]:
        state = load_trainer_state(checkpoint / "trainer_state.pt")
        if state["world_size"] != self.world:
            raise ResumeError(f"checkpoint {checkpoint} was written by {state['world_size']} processes, "
                              f"this run has {self.world}; resume with --num-processes {state['world_size']}")
        if state.get("strategy", "ddp") != self.settings.strategy:
            raise ResumeError(f"checkpoint {checkpoint} was written with trainer.strategy={state.get('strategy', 'ddp')}, "
                              f"this run has {self.settings.strategy}; resume with the same strategy")
        if self.fsdp:
            self.dist.load_sharded(self.policy, self.optimizer, checkpoint / "sharded")
        else:
            self.optimizer.load_state_dict(state["optimizer"])
        self.lr_sched.load_state_dict(state["lr_scheduler"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.cursor.load_state_dict(state["cursor"])
        if state.get("value_head") is not None:  # (FSDP: in the sharded state)
            self.module.value_head.load_state_dict(state["value_head"])
        self.updater.load_state_dict(state.get("updater") or {})
        set_rng_state(state["rng"][self.rank])
        if self.settings.max_staleness:
            self.pending = load_pending(checkpoint, self.rank)
        return state

    # -- the step ----------------------------------------------------------------------------
    def train_step(self, step: int) -> StepResult:
        from accelerate.utils import gather_object

        cfg, tc = self.config, self.settings
        t0 = time.perf_counter()
        extra: dict[str, float] = {}
        if tc.max_staleness:  # the rollout worker played this step's batch (or is playing it)
            horizon, played, stats, extra = take_batch(self, step)
            trajs = played
            if tc.dynamic_sampling:  # the worker played the extra rounds (pipelined)
                trajs, sampled = self._keep_informative(played, step, len({t.group_id for t in played}),
                                                        int(extra["sampling_rounds"]))
                extra.update(sampled)
        else:
            horizon = int(self.scheduler.max_turns(step))
            task_ids = self.cursor.take(cfg.rollout.tasks_per_step)  # same on every rank
            trajs, stats = self._play(task_ids, 0, horizon, step, round_=0)
            played = trajs
            if tc.dynamic_sampling:
                played, trajs, extra = self._dynamic_sampling(trajs, horizon, step)
        t1 = time.perf_counter()
        everything = gather_object(played) if self.world > 1 else played
        self.manager.hook.on_rollout_end(step=step, trajectories=played, run_dir=str(self.run_dir.path))
        if cfg.rollout.dump_trajectories:
            self.run_dir.dump_trajectories(everything, step + 1)
        self._watch_signal(step, trajs, everything)
        batch = build_batch(trajs, pad_id=self.tokenizer.pad_token_id or 0)
        try:
            train = self.updater.step(batch)
        except torch.OutOfMemoryError:
            raise out_of_memory(f"the update of step {step + 1}", self.accelerator.device, tc) from None
        self.lr_sched.step()
        if self.worker is not None:
            sync = publish_weights(self, step, bool(train["updates"]))
        else:
            sync = self._sync_engine() if train["updates"] else 0.0
        t2 = time.perf_counter()
        if self.world > 1:
            gathered = gather_object([train])
            train = {k: sum(g[k] for g in gathered) / len(gathered) for k in train}
        metrics = step_metrics(step, horizon, everything, train, stats, t0, t1, t2, self.world)
        metrics["lr"] = self.lr_sched.get_last_lr()[0]
        metrics["weight_sync_time_s"] = sync
        metrics.update(self.updater.extra_metrics(train, self.world))  # lone_groups, clipfrac_lower, kl_coef
        metrics.update(extra)
        if self.worker is not None:
            metrics.update(async_metrics(self.worker, sync, t0, t1, t2))
        self.scheduler.observe(step, metrics)
        return StepResult(metrics, everything, updated=bool(train["updates"]))

    def _play(self, task_ids: list[int], first_group: int, horizon: int, step: int, round_: int) -> tuple[list, dict]:
        """Roll out this rank's share of *task_ids* (groups numbered from *first_group*), rewards filled in."""
        cfg = self.config
        mine = [(tid, first_group + g) for g, tid in enumerate(task_ids) if g % self.world == self.rank]
        tasks = [(tid, g) for tid, g in mine for _ in range(cfg.rollout.group_size)]
        key = f"{cfg.run.seed}/{step}/{self.rank}" + (f"/{round_}" if round_ else "")
        self.module.eval()
        try:
            trajs, stats = self._rollout(tasks, horizon, step + 1, seed=zlib.crc32(key.encode()))
        except torch.OutOfMemoryError:
            raise out_of_memory(f"the rollout of step {step + 1}", self.accelerator.device, self.settings) from None
        self.module.train()
        self.parts.score(trajs)
        for t in trajs:
            t.step = step + 1
        return trajs, stats

    def _dynamic_sampling(self, trajs: list, horizon: int, step: int) -> tuple[list, list, dict[str, float]]:
        """DAPO's dynamic sampling: play more task groups until ``rollout.tasks_per_step`` of them carry signal
        (or ``trainer.dynamic_sampling_rounds`` extra rounds were played). Returns (every episode played, the
        episodes to train on, metrics)."""
        tc, wanted = self.settings, self.config.rollout.tasks_per_step
        played, groups, rounds = list(trajs), wanted, 0
        kept = informative_groups(played, tc.credit)
        while len(kept) < wanted and rounds < tc.dynamic_sampling_rounds:
            rounds += 1
            more, _ = self._play(self.cursor.take(wanted - len(kept)), groups, horizon, step, round_=rounds)
            groups += wanted - len(kept)
            played += more
            kept = informative_groups(played, tc.credit)
        train, metrics = self._keep_informative(played, step, groups, rounds)
        return played, train, metrics

    def _keep_informative(self, played: list, step: int, groups: int, rounds: int) -> tuple[list, dict[str, float]]:
        """The episodes of the first ``rollout.tasks_per_step`` informative groups of *played* (*groups* task groups
        in *rounds* extra rounds) and dynamic sampling's metrics; says when it keeps hitting its cap."""
        tc, wanted = self.settings, self.config.rollout.tasks_per_step
        kept = informative_groups(played, tc.credit)
        train = keep_groups(played, kept, wanted) if kept else played  # nothing informative: the step trains nothing
        capped = len(kept) < wanted
        if capped:
            ok = [t for t in played if not t.failed]
            line = self.signal.capped(step, tc.dynamic_sampling_rounds, len(kept), wanted,
                                      sum(bool(t.success) for t in ok) / max(1, len(ok)))
            if line and self.main:
                self.say(line)
        else:
            self.signal.uncapped()
        metrics = {"groups_played": float(groups), "groups_dropped": float(groups - min(len(kept), wanted)),
                   "groups_trained": float(min(len(kept), wanted)), "sampling_rounds": float(rounds),
                   "sampling_capped": float(capped)}
        return train, metrics

    def _watch_signal(self, step: int, trajs: list, everything: list) -> None:
        """Warn when no task group of the step could train (every episode of each group got the same reward)."""
        if self.algorithm.needs_critic:  # the value head is the baseline: no group needs a varying reward
            return
        usable = [t for t in trajs if not t.failed]
        if not usable:  # every episode failed on an env error: the env-failure watchdog speaks
            return
        if not self.algorithm.grouped:  # whitened over the batch: one group
            usable = [dataclasses.replace(t, group_id=0) for t in usable]
        if informative_groups(usable, self.settings.credit):
            self.signal.signal()
            return
        groups = len({int(t.group_id) for t in usable})
        line = self.signal.no_signal(step, everything, groups, self.settings.dynamic_sampling)
        if line and self.main:
            self.say(line)
