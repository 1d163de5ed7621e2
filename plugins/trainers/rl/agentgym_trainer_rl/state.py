"""What a checkpoint holds besides the weights: the trainer state (optimizer, schedulers, RNGs, task cursor).

The run directory itself (layout, atomic checkpoint folders, ``latest``) is core's
:mod:`agentgym_core.rundir`; this module writes and reads the torch part of a checkpoint.
"""
from __future__ import annotations

import json
import pickle
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agentgym_core.errors import AgentGymError
from agentgym_core.rundir import finite_or_null


class ResumeError(AgentGymError):
    """A checkpoint cannot be resumed (another world size, objects resume refuses to unpickle)."""


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


class TaskCursor:
    """Training task ids in a seeded shuffled order, epoch after epoch; its state resumes exactly."""

    def __init__(self, ids: list[int], seed: int) -> None:
        if not ids:
            raise AgentGymError("the env's train split is empty: nothing to train on")
        self.ids, self.seed, self.epoch, self.index = list(ids), seed, 0, 0
        self._order = self._shuffle()

    def _shuffle(self) -> list[int]:
        order = list(self.ids)
        random.Random(self.seed * 1_000_003 + self.epoch).shuffle(order)
        return order

    def take(self, n: int) -> list[int]:
        out = []
        while len(out) < n:
            if self.index >= len(self._order):
                self.epoch, self.index = self.epoch + 1, 0
                self._order = self._shuffle()
            out.append(self._order[self.index])
            self.index += 1
        return out

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "index": self.index}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.epoch, self.index = int(state["epoch"]), int(state["index"])
        self._order = self._shuffle()
