"""One training step on a batch: score (old/ref log-probs, values) -> advantages -> PPO epochs.

Nothing here knows which algorithm runs: the estimator fills ``batch.advantages`` (and
``batch.returns`` when it trains a value head) and the policy loss chosen once from
:data:`.registry.POLICY_LOSSES` scores each micro-batch (:meth:`Updater.micro_batch_loss`).
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any, Optional

import torch

from agentgym_core import phase
from agentgym_core.profiling import profiling

from .algorithms import EstimatorOptions, lone_groups
from .config import UpdateConfig, effective_loss_agg
from .batch import Batch, PrefixPlan
from .registry import POLICY_LOSSES, Estimator
from .rows import forward_rows, forward_work, row_tokens
from .losses import adaptive_kl_coef, kl_estimate, normaliser
from .microloss import MicroBatchLoss


@dataclass
class UpdateSettings(UpdateConfig):
    """:class:`UpdateConfig` plus what the trainer decides at run time."""

    bf16: bool = False
    device: str = "cpu"
    #: Shorter common prefixes are not worth a separate pass.
    min_shared_prefix: int = 16


def _unwrap(module: torch.nn.Module) -> torch.nn.Module:
    return module.module if hasattr(module, "module") and not hasattr(module, "lm") else module


class Updater(MicroBatchLoss):
    """Holds the policy (possibly DDP-wrapped), optimizer and reference; runs steps on batches."""

    def __init__(
        self,
        policy: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        algorithm: Estimator,
        opts: UpdateSettings,
        algo_opts: Optional[EstimatorOptions] = None,
        accelerator: Any = None,
        reference: Optional[torch.nn.Module] = None,
    ) -> None:
        self.policy = policy
        self.optimizer = optimizer
        self.algorithm = algorithm
        self.opts = opts
        self.algo_opts = algo_opts if algo_opts is not None else EstimatorOptions()
        self.accelerator = accelerator
        self.reference = reference  # full fine-tuning: a frozen PolicyModule; LoRA: None
        #: The KL coefficient in use: opts.kl_coef, moved after each step under kl_ctrl adaptive.
        self.kl_coef = opts.kl_coef
        self.loss_agg = effective_loss_agg(opts.loss_agg, opts.policy_loss, algorithm.name)
        self.policy_loss = POLICY_LOSSES.get(opts.policy_loss).loss
        self.norm_tokens = opts.loss_norm_tokens if opts.loss_norm_tokens is not None else 1.0
        self._stats: dict[str, float] = {}  # the step's estimator metrics (lone_groups)
        self._work: dict[str, float] = {}  # the last forward's work counts, while profiling
        self._kl_sum = self._kl_count = 0.0  # the last update's summed token KL and token count

    def state_dict(self) -> dict[str, Any]:
        """What a resumed run needs to continue the same update: the adaptive KL coefficient (a fixed
        one comes from the config, so that a resume may change it)."""
        return {"kl_coef": self.kl_coef} if self.opts.kl_ctrl == "adaptive" else {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if self.opts.kl_ctrl == "adaptive" and "kl_coef" in state:
            self.kl_coef = float(state["kl_coef"])

    @staticmethod
    def extra_metrics(train: dict[str, float], world: int) -> dict[str, float]:
        """The step's algorithm metrics from :meth:`step`'s result (averaged over *world* processes):
        ``lone_groups`` (summed over processes), ``clipfrac_lower`` (dual clip), ``kl_coef`` (adaptive),
        ``sampler_logp_diff`` / ``sampler_logp_diff_max`` (mean and max |log pi_trainer - log pi_sampler|
        over trained tokens), ``tis_truncated`` (share of tokens whose weight hit ``tis_cap``) and
        ``segments_per_episode`` (training sequences per episode, when replies were sampled from other
        contexts than their episode's prefix), ``skipped_rows`` / ``skipped_micro_batches`` (summed over
        processes: rows, and micro-batches of nothing but such rows, whose forward and backward were
        skipped for having nothing to learn, :meth:`_idle`)."""
        out = {k: train[k] for k in ("clipfrac_lower", "kl_coef", "sampler_logp_diff", "sampler_logp_diff_max",
                                     "tis_truncated", "segments_per_episode") if k in train}
        for k in ("lone_groups", "skipped_rows", "skipped_micro_batches"):
            if k in train:
                out[k] = train[k] * world
        return out

    # -- helpers ---------------------------------------------------------------------------
    @property
    def module(self) -> torch.nn.Module:
        return _unwrap(self.policy)

    def _autocast(self) -> Any:
        if not self.opts.bf16:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.opts.device.split(":")[0], dtype=torch.bfloat16)

    def _all_reduce(self) -> Any:
        if self.accelerator is None or self.accelerator.num_processes == 1:
            return None
        import torch.distributed as dist

        def reduce(t: torch.Tensor) -> torch.Tensor:
            dist.all_reduce(t)
            return t

        return reduce

    def _chunks(self, rows: torch.Tensor, parts: int) -> list[torch.Tensor]:
        parts = max(1, min(parts, len(rows))) if len(rows) else 1
        return list(torch.tensor_split(rows, parts))

    def _bounded(self, batch: Batch, micros: list[torch.Tensor]) -> list[torch.Tensor]:
        """*micros* with any micro-batch whose forward rows exceed ``micro_batch_tokens`` split, in
        order, into runs of episodes under it (an episode over it alone runs alone). One process
        only: ranks must run the same number of micro-batches."""
        budget = self.opts.micro_batch_tokens
        if budget is None or (self.accelerator is not None and self.accelerator.num_processes > 1):
            return micros
        cost = row_tokens(batch)
        out: list[torch.Tensor] = []
        for micro in micros:
            if int(cost[micro].sum()) <= budget:
                out.append(micro)
                continue
            start, used = 0, 0
            for i, c in enumerate(cost[micro].tolist()):
                if i > start and used + c > budget:
                    out.append(micro[start:i])
                    start, used = i, 0
                used += c
            out.append(micro[start:])
        return out

    def _to(self, t: torch.Tensor) -> torch.Tensor:
        return t.to(self.opts.device)

    def _plan(self, mb: Any) -> Optional[PrefixPlan]:
        return mb.prefix_plan(self.opts.min_shared_prefix) if self.opts.share_prefix else None

    def _forward(self, module: torch.nn.Module, mb: Batch, *, with_entropy: bool,
                 reference: bool = False) -> tuple[dict[str, torch.Tensor], int, float]:
        """Run *module* on micro-batch *mb* (its episodes, or their training segments: :mod:`.rows`);
        outputs in *mb*'s episode layout, with the tokens the plan saved and the tokens run.
        *reference*: the LoRA policy with its adapters off."""
        rows = forward_rows(mb)
        src: Any = mb if rows is None else rows.to(self.opts.device)
        plan = self._plan(src)
        args = (self._to(src.input_ids), self._to(src.attention_mask), self._to(src.loss_mask))
        context = module.reference() if reference else contextlib.nullcontext()
        self._work = forward_work(src.attention_mask, src.loss_mask, plan) if profiling() else {}
        name = "score forward" if not torch.is_grad_enabled() else "update forward"
        with context, phase(name, **self._work):
            out = module(*args, with_entropy=with_entropy, plan=plan)
        if rows is not None:
            out = {k: rows.to_episodes(v) for k, v in out.items()}
        saved = plan.saved_tokens if plan is not None else 0
        return out, saved, float(src.attention_mask.sum()) - saved

    def _order(self, batch: Batch) -> torch.Tensor:
        """A random row order; with prefix sharing, a group's rows stay together (groups shuffled)."""
        rows = torch.randperm(len(batch))
        if not self.opts.share_prefix:
            return rows
        _, group = torch.unique(batch.group_ids, return_inverse=True)
        rank = torch.randperm(int(group.max()) + 1)[group]
        return rows[torch.argsort(rank[rows], stable=True)]

    # -- the step --------------------------------------------------------------------------
    @property
    def single_pass(self) -> bool:
        """One mini-batch, one epoch: old log-probs equal the current ones (no extra forward)."""
        return self.opts.ppo_epochs == 1 and self.opts.mini_batches == 1

    @torch.no_grad()
    def score(self, batch: Batch) -> None:
        """Fill old/ref log-probs and values with a gradient-free pass (only what is needed)."""
        # KL as a reward penalty needs the pre-update log-probs before the update pass too.
        need_old = not self.single_pass or (self.opts.kl_mode == "reward" and self.kl_coef > 0)
        need_ref = self.opts.kl_coef > 0
        need_values = self.algorithm.needs_critic
        if not (need_old or need_ref or need_values):
            return
        module = self.module
        module.eval()
        shape = batch.input_ids.shape
        old, ref, values = torch.zeros(shape), torch.zeros(shape), torch.zeros(shape)
        rows = torch.arange(len(batch))
        for micro in self._bounded(batch, self._chunks(rows, self.opts.grad_accum * self.opts.mini_batches)):
            mb = batch.select(micro)
            length = mb.input_ids.shape[1]
            with self._autocast():
                if need_old or need_values:
                    out = self._forward(module, mb, with_entropy=False)[0]
                    old[micro, :length] = out["logprobs"].float().cpu()
                    if need_values:
                        values[micro, :length] = out["values"].float().cpu()
                if need_ref:
                    if self.reference is not None:
                        r = self._forward(self.reference, mb, with_entropy=False)[0]
                    else:
                        r = self._forward(module, mb, with_entropy=False, reference=True)[0]
                    ref[micro, :length] = r["logprobs"].float().cpu()
        module.train()
        batch.old_logprobs = old if need_old else None
        batch.ref_logprobs = ref if need_ref else None
        batch.values = values if need_values else None

    def advantages(self, batch: Batch) -> None:
        """KL as reward penalty (when configured), then the algorithm's estimator."""
        if self.opts.kl_mode == "reward" and batch.ref_logprobs is not None and batch.old_logprobs is not None:
            kl = kl_estimate(batch.old_logprobs, batch.ref_logprobs, self.opts.kl_estimator, self.opts.kl_clamp)
            batch.token_rewards = batch.token_rewards - self.kl_coef * kl * batch.loss_mask
        batch.advantages, batch.returns = self.algorithm.estimate(batch, self.algo_opts, self._all_reduce())
        if self.algorithm.grouped:
            self._stats["lone_groups"] = float(lone_groups(batch))

    def step(self, batch: Batch) -> dict[str, float]:
        """Score, estimate advantages and update; returns the step's training metrics."""
        self._stats = {}
        self.score(batch)
        self.advantages(batch)
        metrics = self.update(batch)
        metrics.update(self._stats)
        if self.opts.kl_ctrl == "adaptive":
            metrics["kl_coef"] = self.kl_coef
            self._adapt_kl(len(batch))
        return metrics

    def _adapt_kl(self, episodes: int) -> None:
        """Move the KL coefficient by the step's measured KL (token mean over every process)."""
        stats = torch.tensor([self._kl_sum, self._kl_count, float(episodes)], dtype=torch.float64)
        reduce = self._all_reduce()
        if reduce is not None:
            reduce(stats)
        kl_sum, count, episodes_all = stats.tolist()
        if count > 0:
            o = self.opts
            self.kl_coef = adaptive_kl_coef(self.kl_coef, kl_sum / count, o.kl_target, episodes_all, o.kl_horizon)

    def update(self, batch: Batch) -> dict[str, float]:
        o = self.opts
        # Each metric is a weighted mean over the step (tokens, or sequences for a sequence-level
        # pg_loss; mini-batches for loss and grad_norm), so it does not depend on how the rows
        # were split into micro-batches.
        sums: dict[str, float] = {}
        counts: dict[str, float] = {}

        def add(name: str, total: float, weight: float = 1.0) -> None:
            sums[name] = sums.get(name, 0.0) + total
            counts[name] = counts.get(name, 0.0) + weight

        skipped = updates = shared = 0
        skip_idle, idle_rows, idle_micros = self.skips_idle_rows, 0, 0
        self._diff_max = 0.0
        run = 0.0  # tokens the update's forward passes actually ran (no padding, no shared repeats)
        agg, norm_tokens = self.loss_agg, self.norm_tokens
        params = [p for p in self.policy.parameters() if p.requires_grad]
        for epoch in range(o.ppo_epochs):
            first_epoch = epoch == 0
            order = self._order(batch)
            for mini in self._chunks(order, o.mini_batches):
                norm = normaliser(batch.loss_mask[mini], agg, norm_tokens)
                micros = self._bounded(batch, self._chunks(mini, o.grad_accum))
                local_loss = 0.0
                backward = False
                for i, micro in enumerate(micros):
                    if skip_idle:
                        idle = self._idle(batch, micro)
                        if bool(idle.any()):
                            self._skipped_metrics(batch.select(micro[idle]), first_epoch, add)
                            idle_rows += int(idle.sum())
                            micro = micro[~idle]
                        if not len(micro):
                            idle_micros += 1
                            continue
                    backward = True
                    mb = batch.select(micro)
                    defer = self.accelerator is not None and i < len(micros) - 1

                    def sync(defer: bool = defer) -> Any:  # DDP: all-reduce gradients only on the last micro-batch
                        return self.accelerator.no_sync(self.policy) if defer else contextlib.nullcontext()

                    with sync(), self._autocast():
                        out, saved, ran = self._forward(self.policy, mb, with_entropy=True)
                    shared += saved
                    run += ran
                    loss = self.micro_batch_loss(out, mb, norm, first_epoch, add)
                    with sync(), phase("backward", **self._work):
                        if self.accelerator is not None:
                            self.accelerator.backward(loss)
                        else:
                            loss.backward()
                    local_loss += float(loss.detach())
                if skip_idle and not backward:  # the gradients every row would have given: zeros, not None,
                    for p in params:  # so AdamW's moments and weight decay still move the weights
                        if p.grad is None:
                            p.grad = torch.zeros_like(p)
                with phase("optimizer", params=sum(p.numel() for p in params) if profiling() else 0):
                    if self.accelerator is not None:
                        grad_norm = self.accelerator.clip_grad_norm_(params, o.max_grad_norm)
                    else:
                        grad_norm = torch.nn.utils.clip_grad_norm_(params, o.max_grad_norm)
                    grad_norm = float(grad_norm)
                    if math.isfinite(grad_norm) and math.isfinite(local_loss):
                        self.optimizer.step()
                        updates += 1
                        add("grad_norm", grad_norm)
                        add("loss", local_loss)
                    else:
                        skipped += 1
                    self.optimizer.zero_grad(set_to_none=True)
        metrics = {k: sums[k] / max(counts[k], 1e-9) for k in sums}
        if "sampler_logp_diff" in sums:  # (a max, not a mean)
            metrics["sampler_logp_diff_max"] = self._diff_max
        self._kl_sum, self._kl_count = sums.get("kl", 0.0), counts.get("kl", 0.0)
        metrics["updates"] = float(updates)
        metrics["nonfinite_skipped"] = float(skipped)
        metrics["skipped_rows"] = float(idle_rows)  # idle rows not run (each epoch counts), and micro-batches
        metrics["skipped_micro_batches"] = float(idle_micros)  # that had only idle rows
        # Share of the batch's tokens not run again because a group's prefix was run once.
        total = float(batch.attention_mask.sum()) * o.ppo_epochs
        metrics["shared_prefix_frac"] = shared / total if total else 0.0
        metrics["run_tokens"] = run
        if batch.segments is not None:  # replies sampled from other contexts than their episode's prefix
            metrics["segments_per_episode"] = sum(len(s) if s else 1 for s in batch.segments) / len(batch)
        metrics.setdefault("loss", float("nan"))
        return metrics
