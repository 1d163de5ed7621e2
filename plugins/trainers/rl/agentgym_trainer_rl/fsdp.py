"""``trainer.strategy: fsdp``: the policy fully sharded across processes with torch FSDP2 (``fully_shard``).

Each decoder layer is one FSDP unit and the policy module (embeddings, final norm, LM head,
value head) the root, so every forward enters through the root and finds its parameters
gathered. Parameters, gradients and AdamW state live sharded: a process holds ``1/world`` of
them (``fsdp_offload`` moves them to the CPU between uses). With bf16 the layers compute in
bf16 from fp32 master parameters and reduce gradients in fp32.

:class:`FSDPStrategy` gives the :class:`~agentgym_trainer_rl.update.Updater` what it asks of an
accelerator (``num_processes``, ``no_sync``, ``backward``, ``clip_grad_norm_``), so the update
loop runs unchanged under DDP and FSDP; and it gathers full weights for the rollout engine
(which keeps its own copy under FSDP) and for the consolidated Hugging Face checkpoint.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from torch import nn


class FSDPStrategy:
    def __init__(self, accelerator: Any, *, bf16: bool, offload: bool) -> None:
        self.accelerator = accelerator
        self.num_processes = accelerator.num_processes
        self.bf16 = bf16
        self.offload = offload

    # -- sharding --------------------------------------------------------------------------
    def shard(self, policy: nn.Module, *, frozen: bool = False) -> nn.Module:
        """Shard *policy* (a ``PolicyModule``) in place: each decoder layer, then the whole module."""
        from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, OffloadPolicy, fully_shard

        mixed = MixedPrecisionPolicy(param_dtype=torch.bfloat16 if self.bf16 else None, reduce_dtype=torch.float32)
        offload = CPUOffloadPolicy() if self.offload and not frozen else OffloadPolicy()
        for layer in decoder_layers(policy):
            fully_shard(layer, mp_policy=mixed, offload_policy=offload)
        fully_shard(policy, mp_policy=mixed, offload_policy=offload)
        return policy

    # -- what the Updater asks of an accelerator ---------------------------------------------
    @contextlib.contextmanager
    def no_sync(self, model: nn.Module) -> Iterator[None]:
        """Accumulate gradients locally (no reduce-scatter) until the last micro-batch."""
        model.set_requires_gradient_sync(False)
        try:
            yield
        finally:
            model.set_requires_gradient_sync(True)

    def backward(self, loss: torch.Tensor) -> None:
        loss.backward()

    def clip_grad_norm_(self, params: list[nn.Parameter], max_norm: float) -> torch.Tensor:
        """Clip by the norm of the whole (sharded) gradient; returns that norm on every process."""
        norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
        return norm.full_tensor() if hasattr(norm, "full_tensor") else norm

    # -- full weights --------------------------------------------------------------------------
    def full_state_dict(self, module: nn.Module, *, main_only: bool = True) -> dict[str, torch.Tensor]:
        """*module*'s full state dict (collective: every process calls it). *main_only*: on the CPU of
        the main process (a checkpoint); else on every process's device (the engine's weights)."""
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        return get_model_state_dict(module, options=StateDictOptions(full_state_dict=True, cpu_offload=main_only))

    # -- sharded checkpoints (exact resume) ----------------------------------------------------
    def save_sharded(self, policy: nn.Module, optimizer: Any, folder: Path) -> None:
        """Every process writes its shard of the policy and optimizer state (torch distributed checkpoint)."""
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import get_state_dict

        model_state, optim_state = get_state_dict(policy, optimizer)
        dcp.save({"model": model_state, "optimizer": optim_state}, checkpoint_id=str(folder))

    def load_sharded(self, policy: nn.Module, optimizer: Any, folder: Path) -> None:
        """Read back what :meth:`save_sharded` wrote, each process its own shard (any world size works)."""
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

        model_state, optim_state = get_state_dict(policy, optimizer)
        state = {"model": model_state, "optimizer": optim_state}
        dcp.load(state, checkpoint_id=str(folder))
        set_state_dict(policy, optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"])


def decoder_layers(policy: nn.Module) -> list[nn.Module]:
    """The decoder's layer modules of a ``PolicyModule`` (under a peft wrapper, if any)."""
    layers = getattr(policy.base_model.get_decoder(), "layers", None)
    if layers is None:
        raise ValueError(f"trainer.strategy=fsdp: cannot find the decoder layers of {type(policy.base_model).__name__} "
                         "(expected model.get_decoder().layers); use trainer.strategy=ddp")
    return list(layers)


def is_sharded(module: nn.Module) -> bool:
    from torch.distributed.fsdp import FSDPModule

    return isinstance(module, FSDPModule)
