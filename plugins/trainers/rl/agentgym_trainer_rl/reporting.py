"""What a training step reports: the metrics row, the progress-bar text, a weights hash (TensorBoard: core's
:class:`~agentgym_core.trainer.TensorBoardLog`)."""
from __future__ import annotations

import math
from typing import Any


def step_metrics(step: int, horizon: int, trajs: list, train: dict, stats: dict, t0: float, t1: float, t2: float,
             world: int) -> dict[str, float]:
    ok = [t for t in trajs if not t.failed]
    turns = [t.num_turns for t in ok] or [0]
    tokens = sum(len(t.token_ids) for t in trajs)
    generated = sum(t.num_generated for t in trajs)
    nan = float("nan")
    return {
        "step": step + 1,
        "reward_mean": sum(sum(t.rewards) for t in ok) / max(1, len(ok)),
        "success_rate": sum(bool(t.success) for t in ok) / max(1, len(ok)),
        "score_mean": sum(t.score for t in ok) / max(1, len(ok)),
        "turns_mean": sum(turns) / len(turns),
        "turns_max": max(turns),
        "horizon": horizon,
        "kl": train.get("kl"),  # None: not measured (no reference policy), null in metrics.jsonl too
        "entropy": train.get("entropy", nan),
        "loss": train.get("loss", nan),
        "pg_loss": train.get("pg_loss", nan),
        "clipfrac": train.get("clipfrac", nan),
        "grad_norm": train.get("grad_norm", nan),
        **({"value_loss": train["value_loss"]} if "value_loss" in train else {}),
        "nonfinite_skipped": train.get("nonfinite_skipped", 0.0),
        "shared_prefix_frac": train.get("shared_prefix_frac", 0.0),
        "tokens_per_s": tokens / max(t2 - t0, 1e-9),
        "gen_tokens_per_s": generated / max(t1 - t0, 1e-9),
        "train_tokens_per_s": tokens / max(t2 - t1, 1e-9),
        "step_time_s": t2 - t0,
        "rollout_time_s": t1 - t0,
        "update_time_s": t2 - t1,
        "episodes": len(trajs),
        "env_failures": sum(bool(t.failed) for t in trajs),
        "prefix_breaks": prefix_breaks(ok),
        "processes": world,
    }


def prefix_breaks(trajs: list) -> int:
    """Replies whose prompt did not extend the reply before it (a moved history window, an external agent that
    rewrote its history): each starts a training segment of its own."""
    from agentgym_core import needs_segments, training_segments

    return sum(len(training_segments(t)) - 1 for t in trajs if needs_segments(t))


def param_hash(source: Any) -> str:
    """SHA-256 of the trainable weights of a module (or of every tensor of a full state dict)."""
    import hashlib

    h = hashlib.sha256()
    tensors = (source.items() if isinstance(source, dict)
               else ((n, p) for n, p in source.named_parameters() if p.requires_grad))
    for name, p in tensors:
        h.update(name.encode())
        h.update(p.detach().float().cpu().numpy().tobytes())
    return h.hexdigest()


def postfix(m: dict[str, float]) -> str:
    kl = m.get("kl")
    failures = int(m.get("env_failures", 0))
    return (f"reward={m['reward_mean']:.3f} success={m['success_rate']:.2f} turns={m['turns_mean']:.1f} "
            f"horizon={m['horizon']} tok/s={m['tokens_per_s']:.0f}" + ("" if kl is None or math.isnan(kl) else f" kl={kl:.4f}")
            + (f" env_fail={failures}/{int(m['episodes'])}" if failures else ""))
