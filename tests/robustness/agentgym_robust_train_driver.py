"""Runs ``agentgym train`` in this process with a fault injected into the Nth checkpoint write.

    python agentgym_robust_train_driver.py MODE N MARKER -- key=value ...

MODE ``stall``: the Nth ``torch.save`` writes a partial file, touches MARKER and sleeps (the test
SIGKILLs the process). MODE ``enospc``: the Nth ``torch.save`` raises ``OSError(ENOSPC)``.
MODE ``engine``: once N-1 checkpoints are written, the hf engine's ``generate`` raises (a dead GPU).
"""
from __future__ import annotations

import errno
import sys
import time
from pathlib import Path

import torch


def main() -> None:
    mode, nth, marker = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    overrides = sys.argv[sys.argv.index("--") + 1:]
    real_save = torch.save
    calls = {"n": 0}

    def faulty_save(obj, f, *args, **kwargs):
        if str(f).endswith("trainer_state.pt"):
            calls["n"] += 1
            if calls["n"] == nth:
                if mode == "stall":
                    Path(f).write_bytes(b"partial checkpoint bytes")
                    marker.write_text("writing")
                    time.sleep(600)
                raise OSError(errno.ENOSPC, "No space left on device", str(f))
        return real_save(obj, f, *args, **kwargs)

    torch.save = faulty_save
    if mode == "engine":
        from agentgym_engine_hf.engine import HFEngine

        real_generate = HFEngine.generate

        def faulty_generate(self, requests):
            if calls["n"] >= nth - 1:
                raise RuntimeError("injected engine failure: CUDA error: an illegal memory access was encountered")
            return real_generate(self, requests)

        HFEngine.generate = faulty_generate
    from agentgym_core.cli.main import main as cli

    sys.exit(cli(["train", *overrides]))


if __name__ == "__main__":
    main()
