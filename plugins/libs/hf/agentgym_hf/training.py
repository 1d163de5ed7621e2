"""What every trainer of transformers models needs: LoRA, gradient checkpointing, the optimizer, and the
torch part of a checkpoint (trainer state, RNG states).

Shared by the ``rl`` and ``sft`` trainers, so a checkpoint of one loads the same way as the
other's (a Hugging Face model folder, or LoRA adapters, plus ``trainer_state.pt`` and its
readable ``trainer_state.json``).
"""
from __future__ import annotations

import json
import pickle
import random
import sys
from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch
from torch import nn

from agentgym_core import AgentGymError
from agentgym_core.rundir import finite_or_null

from .loading import peft_quiet


class ResumeError(AgentGymError):
    """A checkpoint cannot be resumed (another world size, objects resume refuses to unpickle)."""


# -- the model ----------------------------------------------------------------------------------
def apply_lora(lm: nn.Module, r: int, alpha: int, dropout: float, targets: list[str], last_layers: int = 0) -> nn.Module:
    """Wrap *lm* with LoRA adapters (peft); only the adapters train (on the last *last_layers* layers if > 0)."""
    from peft import LoraConfig, get_peft_model

    layers = None
    if last_layers > 0:
        n = lm.config.get_text_config().num_hidden_layers
        layers = list(range(max(0, n - last_layers), n))
    config = LoraConfig(r=r, lora_alpha=alpha, lora_dropout=dropout, target_modules=list(targets),
                        layers_to_transform=layers, task_type="CAUSAL_LM")
    with peft_quiet():
        return get_peft_model(lm, config)


def with_adapters(lm: nn.Module, settings: Any, checkpoint: Path | None = None) -> nn.Module:
    """*lm* with LoRA adapters for ``trainer.finetune: lora``: those saved in *checkpoint* (a resumed run,
    trainable) or new ones from *settings* (``lora_r``, ``lora_alpha``, ...)."""
    if checkpoint is not None:
        from peft import PeftModel

        with peft_quiet():
            return PeftModel.from_pretrained(lm, str(checkpoint), is_trainable=True)
    s = settings
    return apply_lora(lm, s.lora_r, s.lora_alpha, s.lora_dropout, s.lora_targets, s.lora_layers)


@torch.no_grad()
def plain_state_dict(lm: nn.Module, state: Optional[dict[str, torch.Tensor]] = None, *,
                     adapted_only: bool = False) -> dict[str, torch.Tensor]:
    """The policy's weights under the base model's names, LoRA adapters merged in.

    What an engine holding its own copy of the model (vLLM, or any engine under FSDP) loads
    after each update; the live model is left as it is (no ``merge_and_unload``). *state* is
    ``lm``'s full state dict when its own tensors are sharded (FSDP: gathered by the caller).
    *adapted_only*: of a LoRA model, only the merged weights of the adapted layers (the rest is
    frozen, so an engine that already holds it needs only these after an update).
    """
    state = {k: v.detach() for k, v in (lm.state_dict() if state is None else state).items()}
    if not hasattr(lm, "get_base_model"):
        return state
    prefix = "base_model.model."  # a peft model's names: base_model.model.<the base model's names>
    out: dict[str, torch.Tensor] = {}
    for name, module in lm.get_base_model().named_modules():
        if getattr(module, "base_layer", None) is None or not hasattr(module, "lora_A"):
            continue
        key = f"{prefix}{name}"
        weight = state[f"{key}.base_layer.weight"].to(torch.float32, copy=True)  # merged in fp32 (a bf16 base too)
        for adapter in module.active_adapters:
            if adapter not in module.lora_A:
                continue
            delta = state[f"{key}.lora_B.{adapter}.weight"].float() @ state[f"{key}.lora_A.{adapter}.weight"].float()
            if getattr(module, "fan_in_fan_out", False):
                delta = delta.T
            weight += delta * module.scaling[adapter]
        out[f"{name}.weight"] = weight
        if f"{key}.base_layer.bias" in state:
            out[f"{name}.bias"] = state[f"{key}.base_layer.bias"]
    if adapted_only:
        return out
    for key, value in state.items():
        if ".base_layer." not in key and "lora_" not in key:
            out.setdefault(key.removeprefix(prefix), value)
    return out


@torch.no_grad()
def engine_copy(lm: nn.Module, dtype: torch.dtype) -> nn.Module:
    """A frozen copy of *lm* in *dtype* for the rollout engine to sample from, LoRA adapters merged
    in: the trainer keeps fp32 master weights and updates them under bf16 autocast while the engine
    decodes in bf16 (the live fp32 model would decode at fp32 speed); :func:`plain_state_dict`
    refreshes the copy after each update. Each weight is cast as it is copied, so no second fp32
    copy of the model is ever held."""
    import copy

    # copy=True: in the policy's own dtype ``.to`` would hand back the same storage, and the copy's merge and
    # weight loads would then write into the trainer's parameters (an fp32 asynchronous run)
    memo: dict[int, Any] = {id(p): nn.Parameter(p.detach().to(dtype, copy=True), requires_grad=False)
                            for p in lm.parameters()}
    model = copy.deepcopy(lm, memo)  # tied weights stay tied: one parameter, one copy
    if hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    missing, unexpected = model.load_state_dict(plain_state_dict(lm), strict=False)  # merged in fp32, then cast
    if unexpected or len(missing) == len(model.state_dict()):
        raise RuntimeError(f"engine_copy: the policy's weights do not fit the merged copy (unexpected {unexpected[:3]})")
    model.to(dtype).requires_grad_(False)
    return model.eval()


def enable_checkpointing(lm: nn.Module) -> None:
    """Turn on gradient (activation) checkpointing under the name this transformers uses."""
    if hasattr(lm, "activation_checkpointing_enable"):  # the newer name (transformers 5.2x)
        lm.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    else:
        lm.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})


def make_optimizer(params: list[torch.nn.Parameter], settings: Any, device: Any) -> torch.optim.Optimizer:
    """AdamW over *params* with ``trainer.lr`` and ``weight_decay``: torch's (fused kernels on CUDA),
    or bitsandbytes' 8-bit AdamW (its two moments take 2 bytes per parameter instead of 8)."""
    kind = torch.device(device).type
    if settings.optimizer == "adamw_8bit":
        if kind != "cuda":
            raise AgentGymError(f"trainer.optimizer=adamw_8bit runs on CUDA only (bitsandbytes' 8-bit AdamW); this "
                                f"run trains on {device}: use trainer.optimizer=adamw")
        try:
            import bitsandbytes as bnb
        except ImportError as exc:
            raise AgentGymError("trainer.optimizer=adamw_8bit needs bitsandbytes, which is not installed: "
                                "pip install bitsandbytes (or the trainer's [bnb] extra), or use "
                                "trainer.optimizer=adamw") from exc
        return bnb.optim.AdamW8bit(params, lr=settings.lr, weight_decay=settings.weight_decay)
    fused = {"fused": True} if kind == "cuda" else {}
    return torch.optim.AdamW(params, lr=settings.lr, weight_decay=settings.weight_decay, **fused)


def warmup_schedule(optimizer: torch.optim.Optimizer, warmup: int) -> torch.optim.lr_scheduler.LambdaLR:
    """The learning rate rising linearly over the first *warmup* steps, then constant."""
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup) if warmup else 1.0)


def merge_lora_checkpoint(checkpoint: Path, out: Path) -> Path:
    """Save the model of LoRA checkpoint *checkpoint* with its adapters merged, as a full Hugging Face
    folder *out* (with the tokenizer): what a following stage starts from."""
    from .loading import load_model

    model, tokenizer = load_model(str(checkpoint), dtype="fp32")
    import shutil

    tmp = out.with_name(f".{out.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(str(tmp), safe_serialization=True)
    tokenizer.save_pretrained(str(tmp))
    if out.exists():
        shutil.rmtree(out)
    tmp.replace(out)
    return out


def export_checkpoint(checkpoint: Path) -> tuple[str, str]:
    """What a following pipeline stage starts from: a whole-model checkpoint as saved ("full weights"), LoRA
    adapters merged into a whole model in ``<run dir>/merged`` ("LoRA merged"). ``Trainer.export_model`` of the
    rl and sft trainers."""
    checkpoint = Path(checkpoint)
    if (checkpoint / "config.json").is_file():
        return str(checkpoint), "full weights"
    if not (checkpoint / "adapter_config.json").is_file():
        raise AgentGymError(f"checkpoint {checkpoint} holds neither a model (config.json) nor LoRA adapters "
                            "(adapter_config.json); the next stage cannot start from it")
    merged = checkpoint.parent.parent / "merged"  # <run dir>/checkpoints/step_N -> <run dir>/merged
    print(f"pipeline: merging the LoRA adapters of {checkpoint} into {merged} for the next stage", file=sys.stderr,
          flush=True)
    return str(merge_lora_checkpoint(checkpoint, merged)), "LoRA merged"


# -- the trainer state ----------------------------------------------------------------------------
def write_checkpoint(folder: Path, model: Any, tokenizer: Any, state: dict[str, Any],
                     weights: dict[str, Any] | None = None) -> None:
    """Fill a checkpoint folder: the model in Hugging Face format (LoRA: the adapters), the
    tokenizer, ``trainer_state.pt`` and its readable part ``trainer_state.json``. *weights* is
    the model's full state dict when the live model is sharded (FSDP)."""
    model.save_pretrained(str(folder), safe_serialization=True, **({"state_dict": weights} if weights else {}))
    if tokenizer is not None:
        tokenizer.save_pretrained(str(folder))
    torch.save(state, folder / "trainer_state.pt")
    (folder / "trainer_state.json").write_text(json.dumps(_jsonable(state), indent=2, default=str))


def _jsonable(state: dict[str, Any]) -> dict[str, Any]:
    """The human-readable part of the trainer state (no tensors), valid JSON (NaN -> null)."""
    return finite_or_null({k: v for k, v in state.items()
                           if k not in ("optimizer", "lr_scheduler", "rng", "value_head", "ref")})


def rng_state() -> dict[str, Any]:
    """The RNG states as tensors and plain Python values, so ``torch.load(weights_only=True)`` reads them."""
    name, keys, pos, has_gauss, gauss = np.random.get_state()
    return {"python": random.getstate(), "numpy": (name, torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, gauss),
            "torch": torch.get_rng_state()}


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    name, keys, pos, has_gauss, gauss = state["numpy"]
    np.random.set_state((name, np.asarray(keys, dtype=np.uint32), pos, has_gauss, gauss))
    torch.set_rng_state(state["torch"])


def load_trainer_state(path: Path) -> dict[str, Any]:
    """Read ``trainer_state.pt`` with tensors and plain values only: a checkpoint cannot run code."""
    try:
        return torch.load(path, weights_only=True)
    except pickle.UnpicklingError as exc:
        why = next((line.strip() for line in str(exc).splitlines() if "Unsupported global" in line), "")
        raise ResumeError(
            f"{path} holds objects other than tensors and plain values, which resume refuses to unpickle "
            f"(loading them could run arbitrary code){': ' + why[:200] if why else ''}. A checkpoint written by "
            "this version of AgentGym never does; start a fresh run, or load the model weights from the "
            "checkpoint folder with transformers"
        ) from None
