"""The loss of one micro-batch, and which rows of it have nothing to learn.

:class:`MicroBatchLoss` is the part of :class:`.update.Updater` that turns the policy's outputs on a
micro-batch into the step's loss: the registered policy loss with dual clip and the behaviour
correction (TIS) on top, the entropy bonus, KL and value loss; and, with ``skip_zero_advantage``,
the rows whose loss and gradient are exactly 0, which the update does not run.
"""
from __future__ import annotations

from typing import Any

import torch

from .batch import Batch
from .losses import aggregate, dual_clip, kl_estimate, normaliser, value_loss


class MicroBatchLoss:
    """Mixed into :class:`.update.Updater`, whose ``opts``, ``policy_loss``, ``loss_agg``,
    ``norm_tokens``, ``kl_coef``, ``module``, ``accelerator`` and ``_to`` it reads."""

    opts: Any
    policy_loss: Any
    loss_agg: str
    norm_tokens: Any
    kl_coef: float
    accelerator: Any
    _diff_max: float

    def _to(self, t: torch.Tensor) -> torch.Tensor:  # pragma: no cover - the Updater's
        raise NotImplementedError

    def _behaviour_correction(self, pg: torch.Tensor, old: torch.Tensor, sampler: torch.Tensor, mask: torch.Tensor,
                              first_epoch: bool, add: Any) -> torch.Tensor:
        """Measure how far the sampler's log-probs are from the trainer's (old policy), and with
        ``tis_cap`` weight each token's loss by the truncated ratio min(exp(old - sampler), cap).

        The engine may compute differently from the trainer (another precision, a compiled graph,
        vLLM's kernels): PPO's ratio is taken against the trainer's old policy, and this weight
        corrects for the tokens having been sampled from the engine's (Yao et al. 2025).
        """
        diff = (old - sampler) * mask
        if first_epoch:  # each token counted once
            ntok = float(mask.sum())
            add("sampler_logp_diff", float(diff.abs().sum()), ntok)
            if ntok:
                self._diff_max = max(self._diff_max, float(diff.abs().max()))
        cap = self.opts.tis_cap
        if cap is None:
            return pg
        weight = torch.exp(diff).clamp(max=cap).detach()
        if first_epoch:
            add("tis_truncated", float(((weight >= cap) * mask).sum()), float(mask.sum()))
        return pg * weight

    def micro_batch_loss(self, out: dict[str, torch.Tensor], mb: Batch, norm: float, first_epoch: bool,
                         add: Any) -> torch.Tensor:
        """The loss of micro-batch *mb* from the policy's outputs *out* on it: the registered policy loss
        (dual clip and behaviour correction on top), entropy bonus, KL in the loss and value loss,
        each aggregated over the mini-batch's *norm*; its metrics go to *add(name, total, weight)*."""
        o = self.opts
        agg, norm_tokens = self.loss_agg, self.norm_tokens
        clip_high = o.clip_ratio_high if o.clip_ratio_high is not None else o.clip_ratio
        mask = self._to(mb.loss_mask)
        lp = out["logprobs"].float()
        old = self._to(mb.old_logprobs) if mb.old_logprobs is not None else lp.detach()
        adv = self._to(mb.advantages)
        pg, clipped = self.policy_loss(lp, old, adv, mask, o.clip_ratio, clip_high)
        ntok = float(mask.sum())
        if o.clip_ratio_c is not None:
            pg, lower = dual_clip(pg, adv, o.clip_ratio_c)
            add("clipfrac_lower", float((lower * mask).sum()), ntok)
        if mb.sampler_logprobs is not None:
            pg = self._behaviour_correction(pg, old, self._to(mb.sampler_logprobs), mask, first_epoch, add)
        loss = aggregate(pg, mask, agg, norm)
        add("pg_loss", float(aggregate(pg.detach(), mask, agg, 1.0)), normaliser(mask, agg, norm_tokens))
        add("clipfrac", float((clipped * mask).sum()), ntok)
        ent = out["entropy"].float()
        add("entropy", float((ent.detach() * mask).sum()), ntok)
        if o.entropy_coef:
            loss = loss - o.entropy_coef * aggregate(ent, mask, agg, norm)
        if mb.ref_logprobs is not None:
            kl = kl_estimate(lp, self._to(mb.ref_logprobs), o.kl_estimator, o.kl_clamp)
            add("kl", float((kl.detach() * mask).sum()), ntok)
            if o.kl_mode == "loss":
                loss = loss + self.kl_coef * aggregate(kl, mask, agg, norm)
        if "values" in out and mb.returns is not None:
            vl = value_loss(out["values"].float(), self._to(mb.values), self._to(mb.returns), o.value_clip)
            loss = loss + o.vf_coef * aggregate(vl, mask, agg, norm)
            add("value_loss", float((vl.detach() * mask).sum()), ntok)
        return loss

    @property
    def skips_idle_rows(self) -> bool:
        """Whether rows with nothing to learn skip the update's passes (``skip_zero_advantage``): one
        process only, as DDP and FSDP need every rank to run each micro-batch's backward."""
        return self.opts.skip_zero_advantage and (self.accelerator is None or self.accelerator.num_processes == 1)

    def _idle(self, batch: Batch, micro: torch.Tensor) -> torch.Tensor:
        """``[len(micro)]`` bool: the rows whose loss and gradient are exactly 0. That is a row without a
        trained token, or, when the policy loss is the whole loss, a row whose advantage is 0 on each of
        them. An entropy bonus, a KL term (in the loss, or measured for the reward's penalty and the
        adaptive controller) or a value loss gives every trained token a gradient of its own."""
        trained = batch.loss_mask[micro] > 0
        idle = ~trained.any(dim=1)
        policy_only = not self.opts.entropy_coef and not self.opts.kl_coef and self.module.value_head is None
        if policy_only and batch.advantages is not None:
            idle |= ~((batch.advantages[micro] != 0) & trained).any(dim=1)
        return idle

    def _skipped_metrics(self, mb: Batch, first_epoch: bool, add: Any) -> None:
        """What :meth:`micro_batch_loss` would have added for the idle rows *mb*. Their pg_loss and clip
        flags are 0, so ``pg_loss``, ``clipfrac`` and ``clipfrac_lower`` stay what the full pass gives,
        and so do the sampler metrics when the old log-probs were scored. ``entropy`` (and the sampler
        metrics of a single pass, whose old log-probs are the forward's) covers the rows that ran."""
        mask = mb.loss_mask
        add("pg_loss", 0.0, normaliser(mask, self.loss_agg, self.norm_tokens))
        ntok = float(mask.sum())
        if ntok:
            add("clipfrac", 0.0, ntok)
            if self.opts.clip_ratio_c is not None:
                add("clipfrac_lower", 0.0, ntok)
            if mb.sampler_logprobs is not None and mb.old_logprobs is not None:
                self._behaviour_correction(mask, mb.old_logprobs, mb.sampler_logprobs, mask, first_epoch, add)
