"""The ``trainer`` section of a run config when ``trainer.name: rl``."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from agentgym_core.sections import check_range

ALGORITHM_NAMES = ("ppo", "gae", "grpo", "rloo", "reinforce_pp")


@dataclass
class UpdateConfig:
    """The settings of one policy update; the trainer passes them on to ``Updater`` unchanged."""

    clip_ratio: float = 0.2
    clip_ratio_high: Optional[float] = None
    kl_coef: float = 0.0
    #: ``k1`` or ``k3`` (low-variance, non-negative).
    kl_estimator: str = "k3"
    #: ``loss`` (added to the loss) or ``reward`` (subtracted from token rewards).
    kl_mode: str = "loss"
    entropy_coef: float = 0.0
    #: ``token`` (every generated token weighs the same) or ``sequence`` (every episode).
    loss_agg: str = "token"
    ppo_epochs: int = 1
    mini_batches: int = 1
    grad_accum: int = 1
    max_grad_norm: float = 1.0
    vf_coef: float = 0.5
    value_clip: float = 0.2
    #: Run a group's common prompt once per micro-batch and its episodes against that KV cache
    #: (same gradients; a GRPO group of G shares its prompt). Off under gradient checkpointing.
    share_prefix: bool = True


@dataclass
class RLConfig(UpdateConfig):
    #: ``ppo`` (= ``gae``: value head + GAE), ``grpo``, ``rloo`` or ``reinforce_pp``.
    algorithm: str = "grpo"
    steps: int = 100
    lr: float = 1e-5
    weight_decay: float = 0.0
    warmup_steps: int = 0
    #: ``lora`` (peft adapters; reference = adapters disabled) or ``full``.
    finetune: str = "lora"
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.0
    lora_targets: list[str] = field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])
    #: LoRA on the last N decoder layers only (0: all). Backward then stops at layer -N: cheaper.
    lora_layers: int = 0
    gradient_checkpointing: bool = False
    gamma: float = 1.0
    lam: float = 0.95
    #: GRPO: divide by the group's std; GAE / REINFORCE++: whiten over the batch.
    norm_adv: bool = True
    #: Checkpoint every N steps (0: only at the end); keep the newest K (0: all).
    save_every: int = 10
    keep_checkpoints: int = 2
    #: Stop after this many steps in a row whose updates were all skipped for a non-finite loss.
    max_nonfinite: int = 3
    #: Stop after this many steps in a row in which every episode failed on an env error.
    max_failed_steps: int = 3
    #: Run envs in this process instead of launching env servers.
    local_envs: bool = False
    #: Show the live progress line (main process).
    progress: bool = True

    def __post_init__(self) -> None:
        def one_of(key: str, allowed: tuple[str, ...]) -> None:
            if getattr(self, key) not in allowed:
                raise ValueError(f"trainer.{key} must be one of {', '.join(allowed)}, got {getattr(self, key)!r}")

        one_of("algorithm", ALGORITHM_NAMES)
        one_of("finetune", ("lora", "full"))
        one_of("kl_estimator", ("k1", "k3"))
        one_of("kl_mode", ("loss", "reward"))
        one_of("loss_agg", ("token", "sequence"))
        for key in ("steps", "ppo_epochs", "mini_batches", "grad_accum", "lora_r"):
            check_range(f"trainer.{key}", getattr(self, key), ge=1)
        check_range("trainer.lr", self.lr, gt=0)
        check_range("trainer.weight_decay", self.weight_decay, ge=0)
        check_range("trainer.warmup_steps", self.warmup_steps, ge=0, note="0: no warm-up")
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
        # lora_alpha / lora_r scales the adapters: 0 would leave the model untrained.
        check_range("trainer.lora_alpha", self.lora_alpha, ge=1)
        check_range("trainer.lora_dropout", self.lora_dropout, ge=0, lt=1)
        check_range("trainer.lora_layers", self.lora_layers, ge=0, note="0: every layer")
        check_range("trainer.gamma", self.gamma, ge=0, le=1)
        check_range("trainer.lam", self.lam, ge=0, le=1)
        check_range("trainer.save_every", self.save_every, ge=0, note="0: only at the end")
        check_range("trainer.keep_checkpoints", self.keep_checkpoints, ge=0, note="0: keep all")
        check_range("trainer.max_nonfinite", self.max_nonfinite, ge=1)
        check_range("trainer.max_failed_steps", self.max_failed_steps, ge=1)
