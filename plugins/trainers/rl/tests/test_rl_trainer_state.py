"""``trainer_state.pt`` is read with tensors and plain values only: RNG state round-trips, code never runs."""
from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from agentgym_trainer_rl.state import ResumeError, load_trainer_state, rng_state, set_rng_state


def _draws() -> tuple:
    return random.random(), float(np.random.rand()), float(torch.rand(()))


def test_rng_state_round_trips_through_a_weights_only_load(tmp_path):
    random.seed(1), np.random.seed(2), torch.manual_seed(3)
    np.random.randn()  # leaves a cached gaussian in numpy's state
    torch.save({"rng": [rng_state()], "step": 4}, tmp_path / "trainer_state.pt")
    expected = _draws()
    _draws()  # move every generator on
    state = load_trainer_state(tmp_path / "trainer_state.pt")
    set_rng_state(state["rng"][0])
    assert _draws() == expected and state["step"] == 4


class _RunsCode:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))  # unpickling would create the marker file


def test_a_state_that_would_run_code_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    torch.save({"step": 1, "payload": _RunsCode(str(marker))}, tmp_path / "trainer_state.pt")
    with pytest.raises(ResumeError, match="refuses to unpickle"):
        load_trainer_state(tmp_path / "trainer_state.pt")
    assert not marker.exists()
