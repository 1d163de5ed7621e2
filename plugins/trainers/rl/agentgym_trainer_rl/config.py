"""The ``trainer`` section of a run config when ``trainer.name: rl``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from agentgym_core import TrainerConfig, check_range, did_you_mean
from agentgym_hf.options import FinetuneConfig

from .registry import ESTIMATORS, POLICY_LOSSES, default_loss_agg, grouped_names, methods

#: KL estimator names; verl's names are aliases.
KL_ESTIMATORS = {"k1": "k1", "kl": "k1", "k2": "k2", "mse": "k2", "k3": "k3", "low_var_kl": "k3", "abs": "abs"}
#: Loss aggregation names; the two older names are aliases.
LOSS_AGGS = {
    "token-mean": "token-mean", "token": "token-mean",
    "seq-mean-token-mean": "seq-mean-token-mean", "sequence": "seq-mean-token-mean",
    "seq-mean-token-sum": "seq-mean-token-sum", "seq-mean-token-sum-norm": "seq-mean-token-sum-norm",
}


@dataclass
class UpdateConfig:
    """The settings of one policy update; the trainer passes them on to ``Updater`` unchanged."""

    clip_ratio: float = 0.2
    clip_ratio_high: Optional[float] = None
    #: Dual-clip PPO (Ye et al. 2020): for negative advantages the loss is at most -A * clip_ratio_c.
    #: 3 as in verl (``actor.clip_ratio_c``); null: off.
    clip_ratio_c: Optional[float] = 3.0
    #: ``ppo`` (token ratio) or ``gspo`` (sequence ratio, Zheng et al. 2025): :data:`.registry.POLICY_LOSSES`.
    policy_loss: str = "ppo"
    kl_coef: float = 0.0
    #: ``k1``, ``k2``, ``k3`` (low-variance, non-negative) or ``abs`` (verl's ``kl``, ``mse``,
    #: ``low_var_kl`` name the same).
    kl_estimator: str = "k3"
    #: ``loss`` (added to the loss) or ``reward`` (subtracted from token rewards).
    kl_mode: str = "loss"
    #: Bound each token's KL estimate to [-kl_clamp, kl_clamp]: 10 as verl bounds k3 (here every
    #: estimator is bounded; k1/abs reach 10 only at a log-ratio of 10). null: unbounded.
    kl_clamp: Optional[float] = 10.0
    #: ``fixed`` (kl_coef throughout) or ``adaptive`` (Ziegler et al. 2019: kl_coef moves towards
    #: kl_target at a rate set by kl_horizon episodes).
    kl_ctrl: str = "fixed"
    kl_target: float = 0.1
    kl_horizon: int = 10000
    entropy_coef: float = 0.0
    #: How per-token terms become the loss: ``token-mean`` (= ``token``), ``seq-mean-token-mean``
    #: (= ``sequence``), ``seq-mean-token-sum``, ``seq-mean-token-sum-norm``; null: the algorithm's
    #: own (``dr_grpo``: seq-mean-token-sum, ``policy_loss: gspo``: seq-mean-token-mean, else token-mean).
    loss_agg: Optional[str] = None
    #: seq-mean-token-sum-norm divides each episode's summed loss by this constant.
    loss_norm_tokens: Optional[float] = None
    ppo_epochs: int = 1
    mini_batches: int = 1
    grad_accum: int = 1
    #: At most this many tokens (of the rows a forward pass runs: whole episodes, or the training
    #: segments of windowed ones) in one micro-batch: a micro-batch over it is split further, by
    #: episodes, with the same loss (each part is normalised by the mini-batch). Long windowed
    #: episodes expand into many segment rows (30 turns: ~28 rows of a window each), which at a
    #: fixed grad_accum would hold activations for ~100k tokens at once. One process only (under
    #: DDP/FSDP every rank must run the same number of micro-batches: raise grad_accum there).
    #: null: no bound.
    micro_batch_tokens: Optional[int] = 16384
    max_grad_norm: float = 1.0
    vf_coef: float = 0.5
    value_clip: float = 0.2
    #: Run a group's common prompt once per micro-batch and its episodes against that KV cache
    #: (same gradients; a GRPO group of G shares its prompt). Off under gradient checkpointing.
    share_prefix: bool = True
    #: Rows with nothing to learn skip the update's forward and backward pass: rows without a trained
    #: token, and, when the policy loss is the whole loss (no entropy bonus, no KL, no value head),
    #: rows whose advantage is 0 on every trained token (a GRPO group whose episodes all got the same
    #: reward). Their gradient is exactly 0, so the step is the same; the optimizer still steps. One
    #: process only (under DDP/FSDP every rank runs every row). false: run every row.
    skip_zero_advantage: bool = True
    #: Truncated importance sampling against the sampler (Yao et al. 2025, "Your efficient RL
    #: framework secretly brings you off-policy RL training"; verl's tis_imp_ratio_cap): each
    #: token's policy loss is weighted by min(pi_old / pi_sampler, tis_cap), pi_old being the
    #: trainer's log-prob before the update and pi_sampler the engine's. null: off (with
    #: trainer.max_staleness > 0: 2, the decoupled objective's behaviour weight, :mod:`.asynchronous`).
    tis_cap: Optional[float] = None


@dataclass
class RLConfig(UpdateConfig, FinetuneConfig, TrainerConfig):
    """The lifecycle options (``steps``, ``save_every``, ...) are core's :class:`TrainerConfig`, the model's
    (``lr``, ``finetune``, ``lora_*``, ...) agentgym-hf's :class:`FinetuneConfig`, shared with ``sft``."""

    #: ``ppo`` (= ``gae``: value head + GAE), ``grpo``, ``dr_grpo``, ``rloo``, ``reinforce_pp`` or
    #: ``reinforce_pp_baseline``: :data:`.registry.ESTIMATORS`.
    algorithm: str = "grpo"
    gamma: float = 1.0
    lam: float = 0.95
    #: GRPO: divide by the group's std; GAE / REINFORCE++: whiten over the batch.
    norm_adv: bool = True
    #: Group estimators: ``episode`` (one return per episode on all its tokens) or ``turn`` (each
    #: turn's return from that turn on, against the group's returns at the same turn index).
    credit: str = "episode"
    #: How several processes train: ``ddp`` (each holds the whole model; gradients averaged) or
    #: ``fsdp`` (parameters, gradients and optimizer state sharded across them: torch FSDP2).
    strategy: str = "ddp"
    #: FSDP: keep sharded parameters, gradients and optimizer state on the CPU between uses.
    fsdp_offload: bool = False
    #: Dynamic sampling (DAPO, Yu et al. 2025): drop the task groups whose episodes all got the same
    #: reward (no signal for a group estimator) and play more tasks until the step has
    #: rollout.tasks_per_step informative groups, or dynamic_sampling_rounds extra rounds were played.
    dynamic_sampling: bool = False
    dynamic_sampling_rounds: int = 3
    #: Asynchronous training (:mod:`.asynchronous`): a rollout worker plays while the trainer updates, and no
    #: token an update uses was sampled by weights more than this many updates older than the policy it
    #: updates. 0: the synchronous trainer (play, then update).
    max_staleness: int = 0
    #: ``pipelined``: batch s is sampled by exactly the weights of step s - max_staleness (reproducible bit for
    #: bit, resumes exactly); ``async``: groups stream to the trainer as they complete and the engine follows
    #: the newest weights (faster with uneven episodes, not reproducible).
    async_mode: str = "pipelined"
    #: async: an episode in flight when new weights arrive ``continue``\ s with them (each turn keeps its
    #: version and log-probs) or is played again from its start (``restart``).
    partial_rollout: str = "continue"
    #: Torch threads of the rollout worker (0: torch's default). On a CPU, give the worker and the trainer
    #: a share of the cores each (2 cores: 1 and 1, with engine.threads=1).
    rollout_threads: int = 0
    #: Seconds either side may wait for the other before the run stops with a message naming the side it
    #: waited on (the trainer on the rollout, or the rollout on the trainer's weights).
    watchdog_s: float = 900.0

    def __post_init__(self) -> None:
        super().__post_init__()
        def one_of(key: str, allowed: tuple[str, ...]) -> None:
            value = getattr(self, key)
            if value not in allowed:
                raise ValueError(f"trainer.{key} must be one of {', '.join(allowed)}, got {value!r}."
                                 f"{did_you_mean(str(value), allowed)}")

        one_of("algorithm", ESTIMATORS.names())
        if self.tis_cap is not None:
            check_range("trainer.tis_cap", self.tis_cap, gt=0, note="null: no importance correction; verl and the TIS paper use 2")
        one_of("strategy", ("ddp", "fsdp"))
        if self.fsdp_offload and self.strategy != "fsdp":
            raise ValueError("trainer.fsdp_offload needs trainer.strategy=fsdp (DDP keeps the whole model on the device)")
        one_of("kl_estimator", tuple(KL_ESTIMATORS))
        one_of("kl_mode", ("loss", "reward"))
        if self.loss_agg is not None:
            one_of("loss_agg", tuple(LOSS_AGGS))
        one_of("policy_loss", POLICY_LOSSES.names())
        one_of("kl_ctrl", ("fixed", "adaptive"))
        one_of("credit", ("episode", "turn"))
        self._check_algorithm_options()
        for key in ("ppo_epochs", "mini_batches", "grad_accum"):
            check_range(f"trainer.{key}", getattr(self, key), ge=1)
        if self.micro_batch_tokens is not None:
            check_range("trainer.micro_batch_tokens", self.micro_batch_tokens, ge=1, note="null: no bound")
        # PPO clips the probability ratio to [1 - clip_ratio, 1 + clip_ratio_high].
        check_range("trainer.clip_ratio", self.clip_ratio, gt=0, lt=1)
        if self.clip_ratio_high is not None:
            check_range("trainer.clip_ratio_high", self.clip_ratio_high, gt=0, note="null: same as clip_ratio")
        check_range("trainer.kl_coef", self.kl_coef, ge=0, note="0: no KL term")
        check_range("trainer.entropy_coef", self.entropy_coef, ge=0, note="0: no entropy bonus")
        # clip_grad_norm_ scales gradients to at most this norm: 0 would zero every update.
        check_range("trainer.max_grad_norm", self.max_grad_norm, gt=0, note="inf: no clipping")
        check_range("trainer.vf_coef", self.vf_coef, ge=0)
        check_range("trainer.value_clip", self.value_clip, gt=0, note="inf: no value clipping")
        check_range("trainer.gamma", self.gamma, ge=0, le=1)
        check_range("trainer.lam", self.lam, ge=0, le=1)
        check_range("trainer.dynamic_sampling_rounds", self.dynamic_sampling_rounds, ge=0,
                    note="extra rounds of tasks a step may play")
        check_range("trainer.max_staleness", self.max_staleness, ge=0, note="0: synchronous")
        one_of("async_mode", ("pipelined", "async"))
        one_of("partial_rollout", ("continue", "restart"))
        check_range("trainer.rollout_threads", self.rollout_threads, ge=0, note="0: torch's default")
        check_range("trainer.watchdog_s", self.watchdog_s, gt=0)
        if self.max_staleness > 0:
            if self.dynamic_sampling and self.async_mode == "async":
                raise ValueError("trainer.dynamic_sampling with trainer.max_staleness > 0 runs in "
                                 "trainer.async_mode=pipelined (the rollout worker plays a step's extra rounds by its "
                                 "weights version); the async mode streams groups as they finish and does not refill "
                                 "them yet: use trainer.async_mode=pipelined, or trainer.dynamic_sampling=false")
            if self.strategy == "fsdp":
                raise ValueError("trainer.max_staleness > 0 runs with trainer.strategy=ddp (an FSDP rollout worker "
                                 "would need the gathered weights each step; not built yet)")
            if self.tis_cap is None:  # an off-policy batch is always corrected for its behaviour policy
                self.tis_cap = 2.0
        if self.dynamic_sampling and not ESTIMATORS.get(self.algorithm).grouped:
            raise ValueError(f"trainer.dynamic_sampling drops task groups without reward variance, which only the "
                             f"group estimators need ({', '.join(grouped_names())}), not {self.algorithm!r}")

    @classmethod
    def methods(cls) -> dict[str, str]:
        """``LLMAgent.train(method=...)`` spellings -> ``trainer.algorithm``, for the umbrella, which reaches
        this class through the trainers registry (:func:`.registry.methods`)."""
        return methods()

    def _check_algorithm_options(self) -> None:
        """The options of the estimators and losses, and the combinations that cannot work."""
        if self.clip_ratio_c is not None:
            # The dual clip bounds -A * ratio for A < 0; at or below 1 it would cut the PPO clip itself.
            check_range("trainer.clip_ratio_c", self.clip_ratio_c, gt=1, note="null: no dual clip; verl and the default: 3")
        if self.kl_clamp is not None:
            check_range("trainer.kl_clamp", self.kl_clamp, gt=0, note="null: unbounded; verl and the default: 10")
        check_range("trainer.kl_target", self.kl_target, gt=0)
        check_range("trainer.kl_horizon", self.kl_horizon, ge=1, note="episodes")
        if self.kl_ctrl == "adaptive" and not self.kl_coef > 0:
            raise ValueError("trainer.kl_ctrl: adaptive scales trainer.kl_coef, which is 0: give the starting "
                             "coefficient, e.g. trainer.kl_coef=0.05")
        if self.loss_norm_tokens is not None:
            check_range("trainer.loss_norm_tokens", self.loss_norm_tokens, gt=0)
        elif self.loss_agg == "seq-mean-token-sum-norm":
            raise ValueError("trainer.loss_agg: seq-mean-token-sum-norm divides each episode's summed loss by the "
                             "constant trainer.loss_norm_tokens, which is not set: give the most tokens an episode "
                             "generates (e.g. rollout.max_new_tokens × the largest horizon)")
        if self.credit == "turn" and not ESTIMATORS.get(self.algorithm).grouped:
            raise ValueError(f"trainer.credit: turn applies to the group estimators ({', '.join(grouped_names())}), "
                             f"not {self.algorithm!r}, which already gives each token its own return")


def effective_loss_agg(loss_agg: Optional[str], policy_loss: str = "ppo", algorithm: str = "") -> str:
    """The canonical aggregation: *loss_agg* with aliases resolved, else the registered default of the
    policy loss (GSPO: a mean over sequences, Zheng et al. 2025, eq. 5), else of the estimator (Dr. GRPO:
    (1/G) sum_i sum_t, Liu et al. 2025, eq. 3), else token-mean (:func:`.registry.default_loss_agg`)."""
    if loss_agg is not None:
        return LOSS_AGGS[loss_agg]
    return default_loss_agg(policy_loss, algorithm)
