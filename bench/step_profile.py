"""One training step against the machine's own peak: seconds, tokens and FLOP/s per phase.

    OMP_NUM_THREADS=2 python bench/step_profile.py -c configs/quickstart.yaml [key=value ...]
        [--steps 2] [--warmup 1] [--json out.json]

First the matmul peak of this device in fp32 and in bf16 (a 2048^3 matmul, or a smaller power of two where
the dtype is slow here, best of several within a few seconds, with the
threads torch will use), then ``--warmup + --steps`` steps of the named config's trainer, in this
process, with evaluation and checkpoints off. The warm-up steps are not counted; the rest are
averaged per step. The engine and the trainers mark their phases (``agentgym_core.profiling``):

* ``prefill`` / ``decode``: the engine's model forwards (sampling and bookkeeping are ``rollout other``);
* ``rollout other``: the rest of the rollout's wall time (env calls, prompt building, sampling);
* ``score forward``: the gradient-free pass for old/reference log-probs (PPO epochs, KL);
* ``update forward`` / ``backward`` / ``optimizer`` (grad clip, step, zero); ``update other``: the loss
  and the rest of the update's wall time; ``weight sync``: the engine's copy refreshed.

FLOPs are counted from the model's shape, for the work that was asked for (real tokens, not padding;
a shared prefix counted once): ``2 x`` the layers' matmul weights per token, ``4 x heads x head_dim``
per causal query-key pair per layer, and the LM head on the positions that ran it. Backward: ``2 x``
the forward for full fine-tuning; with LoRA the input gradients through the layers from the first
adapted one (``1 x`` their matmuls, ``2 x`` their attention) and through the LM head. Each phase's
FLOP/s is divided by the peak of the dtype it ran in (the engine's weights; the update's autocast).
The last line is one JSON object: ``prefill_peak_frac``, ``update_peak_frac`` (update forward),
``backward_peak_frac``, ``decode_peak_frac``, ``step_s``, ``rollout_s``, ``update_s``, the peaks.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def matmul_peak(dtype: str, size: int = 2048, repeats: int = 8, budget_s: float = 6.0) -> tuple[float, int]:
    """FLOP/s of the best of up to *repeats* ``size^3`` matmuls in *dtype* on this CPU/GPU's torch threads, and
    the size it used.

    A dtype without fast kernels here (bf16 on a CPU without AVX512-BF16 runs at ~1 GFLOP/s, so one 2048^3
    matmul takes ~20 s) is measured at the largest power-of-two size whose one matmul fits half of
    *budget_s*, judged from a 256^3 probe, and repeats stop once the budget is spent: the peak costs seconds
    on every machine, not minutes.
    """
    import torch

    dt = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def once(a, b) -> float:
        sync()
        start = time.perf_counter()
        a @ b
        sync()
        return time.perf_counter() - start

    probe = torch.randn(256, 256, dtype=dt, device=device)
    rate = 2 * 256**3 / min(once(probe, probe) for _ in range(3))
    while size > 256 and 2 * size**3 / rate > budget_s / 2:  # the small probe underrates fast kernels ~4x
        size //= 2
    a = torch.randn(size, size, dtype=dt, device=device)
    b = torch.randn(size, size, dtype=dt, device=device)
    best, spent = float("inf"), 0.0
    for _ in range(repeats):
        seconds = once(a, b)
        best, spent = min(best, seconds), spent + seconds
        if spent > budget_s:
            break
    return 2 * size**3 / best, size


class Shape:
    """FLOPs per unit of work of a decoder-only transformer, from its config."""

    def __init__(self, config) -> None:
        c = config.get_text_config() if hasattr(config, "get_text_config") else config
        h, heads = c.hidden_size, c.num_attention_heads
        head_dim = getattr(c, "head_dim", None) or h // heads
        kv = getattr(c, "num_key_value_heads", None) or heads
        self.layers = c.num_hidden_layers
        per_layer = h * heads * head_dim * 2 + h * kv * head_dim * 2 + 3 * h * c.intermediate_size
        self.linear = 2 * per_layer * self.layers  # per token, every layer
        self.pair = 4 * heads * head_dim * self.layers  # per query-key pair, every layer
        self.head = 2 * h * c.vocab_size  # per position that ran the LM head

    def forward(self, counts: dict, layer_share: float = 1.0) -> float:
        body = counts.get("tokens", 0.0) * self.linear + counts.get("attended", 0.0) * self.pair
        return layer_share * body + counts.get("head", 0.0) * self.head

    def backward(self, counts: dict, full: bool, layer_share: float) -> float:
        if full:
            return 2 * self.forward(counts)
        body = counts.get("tokens", 0.0) * self.linear + 2 * counts.get("attended", 0.0) * self.pair
        return layer_share * body + counts.get("head", 0.0) * self.head


def first_trained_layer(module) -> int | None:
    """Index of the lowest decoder layer with a trainable parameter (None: none in the layers)."""
    found = [int(m.group(1)) for name, p in module.named_parameters() if p.requires_grad
             for m in [re.search(r"layers\.(\d+)\.", name)] if m]
    return min(found) if found else None


def profile_run(files: list[str], overrides: list[str], steps: int, warmup: int, ops: int = 0) -> dict:
    import torch

    from agentgym_core import profiling
    from agentgym_core.config import build_component, load_config
    from agentgym_core.plugins import get_plugin_manager

    out = tempfile.mkdtemp(prefix="step-profile-")
    manager = get_plugin_manager()
    cfg = load_config(files, [*overrides, f"trainer.steps={warmup + steps}", "eval.before=false", "eval.after=false",
                              "trainer.save_every=0", f"run.output_dir={out}", "run.name=profile", "run.overwrite=true"],
                      manager=manager)
    trainer = build_component(manager, "trainers", cfg.trainer, cfg, manager)
    sync = torch.cuda.synchronize if torch.cuda.is_available() and "cuda" in str(cfg.engine.get("device", "")) else None
    state: dict = {}
    inner = trainer.train_step

    def step(i: int):
        if i == warmup:
            state["profile"].reset()
            state["start"] = time.perf_counter()
            if ops:  # torch's operator profile of the measured steps (slows them: its own run's figures)
                state["torch"] = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
                state["torch"].__enter__()
        return inner(i)

    trainer.train_step = step
    with profiling.collecting(sync=sync) as profile:
        state["profile"] = profile
        trainer.fit()
        wall = time.perf_counter() - state["start"]
    if ops:
        state["torch"].__exit__(None, None, None)
        print(state["torch"].key_averages().table(sort_by="self_cpu_time_total", row_limit=ops), file=sys.stderr)
    rows = [json.loads(line) for line in (Path(out) / "profile" / "metrics.jsonl").read_text().splitlines()]
    rows = [r for r in rows if r["step"] > warmup]
    module = trainer.module
    engine_model = trainer.engine.model
    return {
        "phases": {k: {"seconds": v.seconds, "calls": v.calls, "counts": v.counts} for k, v in profile.phases.items()},
        "metrics": rows, "wall_s": wall, "steps": steps,
        "engine_dtype": str(next(engine_model.parameters()).dtype).removeprefix("torch."),
        "update_bf16": bool(getattr(trainer, "bf16", False)),
        "full": trainer.settings.finetune == "full", "first_layer": first_trained_layer(module),
        "config": module.base_model.config, "model": cfg.model.path,
    }


def table(run: dict, peaks: dict[str, float]) -> tuple[list[tuple], dict]:
    shape = Shape(run["config"])
    n = run["steps"]
    first = run["first_layer"]
    share = 1.0 if run["full"] or first is None else (shape.layers - first) / shape.layers
    engine = "bf16" if "bfloat16" in run["engine_dtype"] else "fp32"
    update = "bf16" if run["update_bf16"] else "fp32"
    mean = {k: sum(r.get(k) or 0.0 for r in run["metrics"]) / n
            for k in ("step_time_s", "rollout_time_s", "update_time_s", "weight_sync_time_s")}
    ph = run["phases"]

    def sec(name: str) -> float:
        return ph.get(name, {}).get("seconds", 0.0) / n

    def counts(name: str) -> dict:
        return {k: v / n for k, v in ph.get(name, {}).get("counts", {}).items()}

    lines, fracs = [], {}

    def row(name: str, seconds: float, dtype: str | None, flops: float | None, tokens: float | None) -> None:
        rate = flops / seconds if flops and seconds else None
        frac = rate / peaks[dtype] if rate and dtype else None
        lines.append((name, seconds, tokens, dtype or "", flops, rate, frac))
        fracs[name] = frac

    for name in ("prefill", "decode"):
        if name in ph:
            row(name, sec(name), engine, shape.forward(counts(name)), counts(name).get("tokens"))
    row("rollout other", max(0.0, mean["rollout_time_s"] - sec("prefill") - sec("decode")), None, None, None)
    if "score forward" in ph:
        row("score forward", sec("score forward"), update, shape.forward(counts("score forward")),
            counts("score forward").get("tokens"))
    row("update forward", sec("update forward"), update, shape.forward(counts("update forward")),
        counts("update forward").get("tokens"))
    row("backward", sec("backward"), update, shape.backward(counts("backward"), run["full"], share),
        counts("backward").get("tokens"))
    row("optimizer", sec("optimizer"), None, None, None)
    accounted = sum(sec(k) for k in ("score forward", "update forward", "backward", "optimizer"))
    row("update other", max(0.0, mean["update_time_s"] - mean["weight_sync_time_s"] - accounted), None, None, None)
    row("weight sync", mean["weight_sync_time_s"], None, None, None)
    return lines, {"fracs": fracs, "mean": mean, "share": share}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-c", "--config", action="append", required=True, help="config file(s), merged in order")
    ap.add_argument("overrides", nargs="*", help="dotlist overrides, e.g. model.dtype=fp32")
    ap.add_argument("--steps", type=int, default=2, help="steps measured (default 2)")
    ap.add_argument("--warmup", type=int, default=1, help="steps run first and not counted (default 1)")
    ap.add_argument("--json", default=None, help="also write the whole result here")
    ap.add_argument("--ops", type=int, default=0, metavar="N",
                    help="also print torch's N costliest operators over the measured steps (timings then include "
                         "the profiler's overhead)")
    args = ap.parse_args()
    if args.steps < 1 or args.warmup < 0:
        raise SystemExit("--steps must be >= 1 and --warmup >= 0")
    import torch

    from agentgym_core.backend import cpu_bf16_reason

    threads = torch.get_num_threads()
    measured = {dtype: matmul_peak(dtype) for dtype in ("fp32", "bf16")}
    peaks = {dtype: rate for dtype, (rate, _) in measured.items()}
    sizes = {dtype: size for dtype, (_, size) in measured.items()}
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, "
          f"{threads} threads, bf16: {cpu_bf16_reason()}", file=sys.stderr)
    print(f"# matmul peak: fp32 {peaks['fp32'] / 1e9:.0f} GFLOP/s ({sizes['fp32']}^3), "
          f"bf16 {peaks['bf16'] / 1e9:.0f} GFLOP/s ({sizes['bf16']}^3)",
          file=sys.stderr)
    run = profile_run(args.config, args.overrides, args.steps, args.warmup, args.ops)
    lines, info = table(run, peaks)
    mean = info["mean"]
    print(f"# {' '.join(args.config)} {' '.join(args.overrides)}: {args.steps} step(s) after {args.warmup} warm-up, "
          f"engine {run['engine_dtype']}, update {'bf16 autocast' if run['update_bf16'] else 'fp32'}, "
          f"{'full' if run['full'] else 'LoRA'} (backward through {info['share']:.0%} of the layers)")
    print("| phase | s/step | tokens/step | dtype | GFLOP/step | GFLOP/s | of peak |")
    print("|---|---:|---:|---|---:|---:|---:|")
    for name, seconds, tokens, dtype, flops, rate, frac in lines:
        print(f"| {name} | {seconds:.2f} | {'' if tokens is None else f'{tokens:,.0f}'} | {dtype} | "
              f"{'' if flops is None else f'{flops / 1e9:.1f}'} | {'' if rate is None else f'{rate / 1e9:.0f}'} | "
              f"{'' if frac is None else f'{frac:.0%}'} |")
    skipped = sum(r.get("skipped_rows") or 0.0 for r in run["metrics"]) / run["steps"]
    print(f"step {mean['step_time_s']:.2f} s = rollout {mean['rollout_time_s']:.2f} s + update "
          f"{mean['update_time_s']:.2f} s (weight sync inside: {mean['weight_sync_time_s']:.3f} s)"
          + (f"; {skipped:.1f} rows a step skipped their passes (advantage 0: trainer.skip_zero_advantage)"
             if skipped else ""))
    fr = info["fracs"]
    result = {
        "prefill_peak_frac": fr.get("prefill"), "decode_peak_frac": fr.get("decode"),
        "update_peak_frac": fr.get("update forward"), "backward_peak_frac": fr.get("backward"),
        "step_s": mean["step_time_s"], "rollout_s": mean["rollout_time_s"], "update_s": mean["update_time_s"],
        "engine_dtype": run["engine_dtype"], "update_dtype": "bf16" if run["update_bf16"] else "fp32",
        "peak_fp32_gflops": peaks["fp32"] / 1e9, "peak_bf16_gflops": peaks["bf16"] / 1e9,
        "peak_sizes": sizes, "threads": threads,
    }
    if args.json:
        Path(args.json).write_text(json.dumps({**result, "phases": run["phases"], "metrics": run["metrics"]}, indent=1))
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in result.items()}))


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
