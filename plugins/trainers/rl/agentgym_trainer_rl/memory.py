"""Will the policy fit? The memory a run's model state needs, checked before anything loads.

Counted per process: fp32 weights (the trainer's master copy), their gradients and AdamW's two
moments for the trained parameters, a frozen reference copy (full fine-tuning with a KL term),
and the rollout engine's own copy when it keeps one (FSDP). Activations depend on the batch and
are not counted: the error's advice covers them. A run that would not fit fails with the
figures and the settings that would make it fit, instead of an out-of-memory crash minutes in.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentgym_core import AgentGymError

GIB = 1024**3


class WontFit(AgentGymError):
    """The model state a run needs exceeds the memory its device has free."""


@dataclass
class Estimate:
    """Bytes per process of each part of the model state."""

    weights: float
    gradients: float
    optimizer: float
    reference: float
    engine: float
    trained_params: int

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer + self.reference + self.engine


def count_parameters(model_path: str) -> tuple[int, Any]:
    """``(parameters, config)`` of the model at *model_path*, without loading its weights."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from agentgym_hf.convert import resolve_model_path

    config = AutoConfig.from_pretrained(str(resolve_model_path(model_path)))
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters()), config


def lora_parameters(config: Any, settings: Any) -> int:
    """Trained parameters of LoRA adapters: r * (fan_in + fan_out) per adapted projection and layer."""
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    hidden, inter = text.hidden_size, getattr(text, "intermediate_size", 4 * text.hidden_size)
    heads = text.num_attention_heads
    head_dim = getattr(text, "head_dim", None) or hidden // heads
    kv = getattr(text, "num_key_value_heads", heads) * head_dim
    shapes = {"q_proj": (hidden, heads * head_dim), "k_proj": (hidden, kv), "v_proj": (hidden, kv),
              "o_proj": (heads * head_dim, hidden), "gate_proj": (hidden, inter), "up_proj": (hidden, inter),
              "down_proj": (inter, hidden)}
    layers = text.num_hidden_layers if settings.lora_layers <= 0 else min(settings.lora_layers, text.num_hidden_layers)
    per_layer = sum(settings.lora_r * sum(shapes.get(t, (hidden, hidden))) for t in settings.lora_targets)
    return per_layer * layers


def estimate(params: int, trained: int, settings: Any, *, world: int = 1, engine_copy: bool = False,
             engine_bytes: int = 2) -> Estimate:
    """What :class:`Estimate` says for a model of *params* parameters of which *trained* train."""
    shard = world if settings.strategy == "fsdp" else 1
    on_device = 0.0 if getattr(settings, "fsdp_offload", False) else 1.0
    moments = 2.0 if settings.optimizer == "adamw_8bit" else 8.0  # two fp32 moments, or two 8-bit ones
    reference = 4.0 * params / shard if settings.finetune == "full" and settings.kl_coef > 0 else 0.0
    return Estimate(
        weights=4.0 * params / shard * on_device,
        gradients=4.0 * trained / shard * on_device,
        optimizer=moments * trained / shard * on_device,
        reference=reference,
        engine=float(engine_bytes * params) if engine_copy else 0.0,
        trained_params=trained,
    )


def check_fits(need: Estimate, free: float, where: str, *, params: int, world: int, settings: Any) -> None:
    """Raise :class:`WontFit` naming the memory *need* exceeding *free* and what would make it fit."""
    if need.total <= free:
        return
    ways = []
    if settings.finetune == "full":
        ways.append(f"trainer.finetune=lora (trains adapters, not all {params / 1e9:.2f}B parameters)")
    if settings.strategy != "fsdp":
        ways.append("trainer.strategy=fsdp with more processes (--num-processes N: weights, gradients and optimizer "
                    "state are split N ways)")
    elif not getattr(settings, "fsdp_offload", False):
        ways.append("trainer.fsdp_offload=true (sharded state on the CPU)")
    if settings.optimizer != "adamw_8bit":
        ways.append("trainer.optimizer=adamw_8bit (CUDA, bitsandbytes: 2 bytes of optimizer state per parameter "
                    "instead of 8)")
    ways.append("and for activations trainer.gradient_checkpointing=true, a smaller rollout.tasks_per_step or "
                "rollout.group_size, or more trainer.grad_accum")
    parts = (f"weights {need.weights / GIB:.1f}, gradients {need.gradients / GIB:.1f}, AdamW state "
             f"{need.optimizer / GIB:.1f}" + (f", reference {need.reference / GIB:.1f}" if need.reference else "")
             + (f", engine copy {need.engine / GIB:.1f}" if need.engine else ""))
    raise WontFit(f"the model will not fit on {where}: it needs about {need.total / GIB:.1f} GiB per process before "
                  f"activations ({parts} GiB; {need.trained_params / 1e6:.1f}M trained parameters"
                  f"{f', {world} processes' if world > 1 else ''}), and {where} has {free / GIB:.1f} GiB free. "
                  f"Options: {'; '.join(ways)}")


def check_run_fits(config: Any, settings: Any, device: Any, world: int, bf16: bool) -> None:
    """Fail before loading anything when the model state of run *config* cannot fit on *device*."""
    params, model_config = count_parameters(config.model.path)
    trained = params if settings.finetune == "full" else lora_parameters(model_config, settings)
    engine_bytes = 2 if config.model.dtype in ("auto", "bf16", "fp16") and bf16 else 4
    # FSDP's engine holds its own copy; so does the hf engine's bf16 decoding (RLTrainer.bf16_engine_copy).
    engine_copy = settings.strategy == "fsdp" or (config.model.dtype in ("auto", "bf16") and bf16
                                                  and config.engine.name == "hf")
    need = estimate(params, trained, settings, world=world, engine_copy=engine_copy,
                    engine_bytes=engine_bytes)
    check_fits(need, free_memory(device), str(device), params=params, world=world, settings=settings)


def free_memory(device: Any) -> float:
    """Bytes free on *device* (CUDA: the driver's count; CPU: available RAM)."""
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        return float(torch.cuda.mem_get_info(device)[0])
    try:
        import psutil
    except ImportError:
        return float("inf")
    return float(psutil.virtual_memory().available)


def out_of_memory(where: str, device: Any, settings: Any) -> WontFit:
    """The error for an out-of-memory failure during a step: what was in use, and what to change."""
    import torch

    device = torch.device(device)
    used = ""
    if device.type == "cuda":
        used = (f" (peak {torch.cuda.max_memory_allocated(device) / GIB:.1f} GiB allocated of "
                f"{torch.cuda.get_device_properties(device).total_memory / GIB:.1f} GiB)")
    return WontFit(f"out of memory on {device} during {where}{used}. Options: a smaller rollout.tasks_per_step, "
                   "rollout.group_size or rollout.max_episode_tokens; more trainer.grad_accum or trainer.mini_batches; "
                   "trainer.gradient_checkpointing=true" + ("" if settings.finetune == "lora" else "; trainer.finetune=lora")
                   + ("; trainer.strategy=fsdp with more processes" if settings.strategy != "fsdp" else ""))
