"""GPU throughput: rollout tokens/s with the hf engine, trainer tokens/s and MFU, peak memory.

    python bench/gpu.py            # 135M and ~0.5B random models on cuda (fits in 8 min on one H200)
    python bench/gpu.py --smoke    # tiny model on CPU, seconds: checks the script, not the card

No weights travel: the models are randomly initialised from a config over the bundled SmolLM2
tokenizer (``SHAPES``). Rollout drives ``agentgym_core.rollout.runner.rollout`` with an
in-process echo env (so env time is ~0 and the engine is measured), with the hf engine's plain
and static decode paths, next to HF ``generate()`` alone; training runs the ``rl`` trainer's
``Updater`` (GRPO, bf16 autocast, AdamW) on those trajectories, then on a fixed batch
(``--train-batch``, b16x2048: the shape of the "plain HF training reaches ~34% MFU" reference)
without and with FSDP on one process (``trainer.strategy: fsdp``'s overhead with nothing to
hide it behind), then one whole GRPO step (``--grpo-step``, 64 episodes x 8 turns: rollout with
the fast decode path on a GPU, then the update). tokens/s counts the batch's tokens; MFU counts
6*params*tokens FLOPs for the tokens the update actually ran (a group's shared prefix once,
nothing after a row's last generated token) against ``--peak-tflops`` (790 bf16 TFLOP/s
measured on an H200). Prints a table and writes ``$OUT/gpu_bench.json`` when ``OUT`` is set.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import resource
import sys
import time
from datetime import datetime, timezone


GROUP = 4  # episodes per task, as a GRPO group


def _echo_env():
    from agentgym_core import BaseEnv

    class Echo(BaseEnv):
        instruction = "Reply with anything; the episode lasts a fixed number of turns."
        action_format = "free"

        def reset(self, *, task_id=None, seed=None):
            self.n = 0
            return f"Task {task_id}: you are in a room with a red ball, a blue key and a green door. What do you do?"

        def step(self, action):
            self.n += 1
            return f"Step {self.n}: nothing happens. You see a red ball and a door.", 0.0, False, {}

    return Echo


#: Model shapes (random weights over the SmolLM2 vocabulary): SmolLM2-135M's own Llama body,
#: Qwen2.5-0.5B's body (30 layers instead of 24 to reach ~0.5B with a 49k vocab), a tiny one for --smoke.
SHAPES = {
    "135m": ("llama", dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
                           num_key_value_heads=3)),
    "0.5b": ("qwen2", dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=30, num_attention_heads=14,
                           num_key_value_heads=2)),
    "smoke": ("qwen2", dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                            num_key_value_heads=2)),
}


def _model(tok, shape: str, device: str, dtype):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    family, body = SHAPES[shape]
    config_cls, model_cls = (LlamaConfig, LlamaForCausalLM) if family == "llama" else (Qwen2Config, Qwen2ForCausalLM)
    cfg = config_cls(vocab_size=len(tok), max_position_embeddings=8192, tie_word_embeddings=True,
                     bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, **body)
    torch.manual_seed(0)
    model = model_cls(cfg).to(device=device, dtype=dtype)
    model.eval()
    return model


def _peak_reset(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()


def _peak_gib(device: str) -> float:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() / 2**30
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # process RSS high-water mark


def bench_rollout(model, tok, device: str, batch: int, turns: int, new_tokens: int,
                  decode: str = "plain") -> tuple[dict, list]:
    from agentgym_core.assembly import local_parts
    from agentgym_core.rollout.runner import rollout
    from agentgym_engine_hf.engine import HFEngine

    env = _echo_env()
    engine = HFEngine(model, tok, max_batch_size=batch, max_cached_episodes=batch, decode=decode)
    settings = dict(action_format="free", max_new_tokens=new_tokens, concurrency=batch, temperature=1.0,
                    max_episode_tokens=8192)
    kwargs = dict(max_turns=turns)
    warm = time.perf_counter()
    if decode == "static":  # every episode, one turn: the graphs of the full batch are captured here
        asyncio.run(rollout(local_parts(engine, env, **settings), [(i, i) for i in range(batch)], seed=1,
                            max_turns=1))
    else:
        asyncio.run(rollout(local_parts(engine, env, **settings), [(i, i) for i in range(min(batch, 4))], seed=1,
                            **kwargs))  # warm-up
    warm = time.perf_counter() - warm
    _peak_reset(device)
    stats: dict = {}
    start = time.perf_counter()
    # GRPO-shaped: groups of GROUP episodes play the same task (so they share its prompt)
    tasks = [(i // GROUP, i // GROUP) for i in range(batch)]
    trajs = asyncio.run(rollout(local_parts(engine, env, **settings), tasks, seed=0, stats=stats, **kwargs))
    wall = time.perf_counter() - start
    generated = sum(sum(t.loss_mask) for t in trajs)
    total = sum(len(t.token_ids) for t in trajs)
    prefill = sum(t.prefill_tokens for t in trajs)
    row = {"phase": f"rollout hf engine{'' if decode == 'plain' else f' decode={decode}'}, batch {batch} (groups of {GROUP})",
           "seconds": wall, "tokens": generated, "tokens_per_s": generated / wall, "episode_tokens": total,
           "prefill_tokens": prefill, "mean_batch": stats.get("mean_batch"), "peak_gib": _peak_gib(device),
           "warmup_seconds": warm}
    if engine.static is not None:
        static = engine.static
        row.update(fell_back=static.broken, graphs=static.graphs.captures if static.graphs else 0,
                   decode_steps=static.steps)
    engine.close()
    return row, trajs


def bench_generate(model, tok, device: str, batch: int, new_tokens: int, cache: str | None) -> dict:
    """HF ``generate`` alone (no env, no episode logic): the reference the engine is compared with."""
    import torch

    prompt = tok.apply_chat_template([{"role": "user", "content": "Describe the room you are in. " * 4}],
                                     tokenize=False, add_generation_prompt=True)
    ids = tok([prompt] * batch, return_tensors="pt", add_special_tokens=False).to(device)
    extra = {"cache_implementation": cache} if cache else {}
    gen = dict(max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=True, pad_token_id=tok.pad_token_id, **extra)
    with torch.no_grad():
        model.generate(**ids, **gen)  # warm-up at the same lengths (a static cache compiles for its length)
        _peak_reset(device)
        start = time.perf_counter()
        out = model.generate(**ids, **gen)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
    wall = time.perf_counter() - start
    n = (out.shape[1] - ids["input_ids"].shape[1]) * batch
    return {"phase": f"hf generate only, {cache or 'dynamic'} cache, batch {batch}", "seconds": wall, "tokens": n,
            "tokens_per_s": n / wall, "peak_gib": _peak_gib(device)}


def rollout_rows(model, tok, device: str, shape: str, batches: list[int], turns: int, new_tokens: int,
                 hf_static: set[int], deadline: float) -> tuple[list[dict], list]:
    """Rollout tokens/s at each batch with the hf engine's plain and static decode paths, and
    HF ``generate()`` alone for reference (dynamic cache at every batch; its compiled static
    cache only at the batches in *hf_static*: each compiles for 40-50 s on an H200). Rows not
    started by *deadline* (``time.perf_counter()``) are skipped, so the device call ends in time."""
    import torch

    rows, first = [], None
    for batch in batches:
        for decode in ("plain", "static"):
            if time.perf_counter() > deadline:
                rows.append({"phase": f"rollout hf engine decode={decode}, batch {batch}", "error": "skipped: time budget"})
                continue
            try:
                row, trajs = bench_rollout(model, tok, device, batch, turns, new_tokens, decode)
                first = first or trajs
            except Exception as exc:  # noqa: BLE001 - keep the rows measured so far; say what failed
                row = {"phase": f"rollout hf engine decode={decode}, batch {batch}", "error": f"{type(exc).__name__}: {exc}"[:200]}
            rows.append(row)
            if device.startswith("cuda"):
                torch.cuda.empty_cache()
        for cache in (None, "static") if batch in hf_static else (None,):
            if time.perf_counter() > deadline:
                rows.append({"phase": f"hf generate only, {cache} cache, batch {batch}", "error": "skipped: time budget"})
                continue
            try:
                rows.append(bench_generate(model, tok, device, batch, new_tokens, cache))
            except Exception as exc:  # noqa: BLE001 - a transformers version without it: say so, go on
                rows.append({"phase": f"hf generate only, {cache} cache, batch {batch}", "error": f"{type(exc).__name__}: {exc}"[:120]})
    for row in rows:
        row["model"] = shape
    return rows, first


def bench_train(model, tok, device: str, trajs: list, steps: int, grad_accum: int, params: int, peak_tflops: float,
                share_prefix: bool) -> dict:
    import torch

    from agentgym_trainer_rl.algorithms import ALGORITHMS
    from agentgym_trainer_rl.policy import PolicyModule
    from agentgym_trainer_rl.update import UpdateSettings, Updater

    rng = random.Random(0)
    for t in trajs:  # GRPO needs reward differences inside a group (of GROUP) to produce a gradient
        t.rewards = [0.0] * (len(t.turns) - 1) + [float(rng.random() < 0.5)]
    model.float().train()  # fp32 master weights + bf16 autocast, as the trainer runs
    policy = PolicyModule(model).to(device)
    optimizer = torch.optim.AdamW([p for p in policy.parameters() if p.requires_grad], lr=1e-6)
    bf16 = device.startswith("cuda")
    updater = Updater(policy, optimizer, ALGORITHMS["grpo"],
                      UpdateSettings(bf16=bf16, device=device, grad_accum=grad_accum, share_prefix=share_prefix))
    tokens, wall, metrics = _timed_updates(updater, trajs, tok, device, steps)
    rate = tokens * steps / wall
    # MFU counts the tokens the forward passes ran (a shared prefix once, no tokens past the
    # last generated one), not the batch's tokens, so skipped work does not inflate it.
    run = metrics.get("run_tokens", tokens)
    mfu = 6 * params * run / (wall / steps) / (peak_tflops * 1e12) if device.startswith("cuda") else None
    sharing = "group prompt once" if share_prefix else "no prefix sharing"
    return {"phase": f"train rl Updater (grpo, {'bf16' if bf16 else 'fp32'}, {sharing}), {len(trajs)} episodes",
            "seconds": wall, "tokens": tokens * steps, "tokens_per_s": rate, "mfu": mfu, "run_tokens": run * steps,
            "updates": metrics.get("updates"), "peak_gib": _peak_gib(device)}


def _timed_updates(updater, trajs: list, tok, device: str, steps: int) -> tuple[int, float, dict]:
    """One warm-up update (allocator, kernels), then *steps* timed ones: (tokens per batch, wall s, last metrics)."""
    import torch

    from agentgym_trainer_rl.batch import build_batch

    tokens = int(build_batch(trajs, pad_id=tok.pad_token_id or 0).attention_mask.sum())
    updater.step(build_batch(trajs, pad_id=tok.pad_token_id or 0))
    _peak_reset(device)
    start = time.perf_counter()
    for _ in range(steps):
        metrics = updater.step(build_batch(trajs, pad_id=tok.pad_token_id or 0))
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return tokens, time.perf_counter() - start, metrics


def fixed_trajectories(vocab: int, rows: int, length: int, turns: int = 8) -> list:
    """*rows* episodes of exactly *length* tokens in GRPO groups: a 256-token prompt, then *turns*
    turns of generated tokens (loss mask 1) each followed by a 64-token observation."""
    from agentgym_core.rollout.trajectory import Trajectory, Turn

    gen = random.Random(1)
    prompt, obs = min(256, length // 4), 64
    span = max(1, (length - prompt - turns * obs) // turns)
    trajs = []
    for i in range(rows):
        mask, spans, pos = [0] * prompt, [], prompt
        for _ in range(turns):
            spans.append(Turn(start=pos, end=pos + span, text="", action="x"))
            mask += [1] * span + [0] * obs
            pos += span + obs
        mask = (mask + [0] * length)[:length]
        t = Trajectory(episode_id=f"b{i}", env_name="fixed", task_id=i // GROUP, group_id=i // GROUP,
                       token_ids=[gen.randrange(3, vocab) for _ in range(length)], loss_mask=mask,
                       logprobs=[0.0] * length, prompt_len=prompt, turns=[s for s in spans if s.end <= length])
        trajs.append(t)
    return trajs


def bench_train_fixed(model, tok, device: str, rows: int, length: int, steps: int, grad_accum: int, params: int,
                      peak_tflops: float, fsdp: bool) -> dict:
    """The update alone on a fixed ``rows x length`` batch (b16x2048 on a GPU), plain or sharded with
    FSDP2 on one process (its overhead without any communication to hide it)."""
    import copy

    import torch

    from agentgym_trainer_rl.algorithms import ALGORITHMS
    from agentgym_trainer_rl.policy import PolicyModule
    from agentgym_trainer_rl.update import UpdateSettings, Updater

    trajs = fixed_trajectories(len(tok), rows, length)
    rng = random.Random(0)
    for t in trajs:
        t.rewards = [0.0] * (len(t.turns) - 1) + [float(rng.random() < 0.5)]
    lm = copy.deepcopy(model).float().train()
    policy = PolicyModule(lm).to(device)
    bf16 = device.startswith("cuda")
    strategy = None
    if fsdp:
        import types

        from agentgym_trainer_rl.fsdp import FSDPStrategy

        _one_process_group(device)
        strategy = FSDPStrategy(types.SimpleNamespace(num_processes=1), bf16=bf16, offload=False)
        strategy.shard(policy)
    fused = {"fused": True} if device.startswith("cuda") else {}
    optimizer = torch.optim.AdamW([p for p in policy.parameters() if p.requires_grad], lr=1e-6, **fused)
    updater = Updater(policy, optimizer, ALGORITHMS["grpo"],
                      UpdateSettings(bf16=bf16, device=device, grad_accum=grad_accum, share_prefix=False), None, strategy)
    tokens, wall, metrics = _timed_updates(updater, trajs, tok, device, steps)
    run = metrics.get("run_tokens", tokens)
    mfu = 6 * params * run / (wall / steps) / (peak_tflops * 1e12) if device.startswith("cuda") else None
    row = {"phase": f"train b{rows}x{length} ({'fsdp, 1 process' if fsdp else 'no fsdp'}, "
                    f"{'bf16' if bf16 else 'fp32'}, fused AdamW)" if fused else
                    f"train b{rows}x{length} ({'fsdp, 1 process' if fsdp else 'no fsdp'}, {'bf16' if bf16 else 'fp32'})",
           "seconds": wall, "tokens": tokens * steps, "tokens_per_s": tokens * steps / wall, "mfu": mfu,
           "run_tokens": run * steps, "updates": metrics.get("updates"), "peak_gib": _peak_gib(device)}
    del updater, optimizer, policy, lm
    if fsdp:
        import torch.distributed as dist

        dist.destroy_process_group()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return row


def _one_process_group(device: str) -> None:
    """A process group of one (FSDP needs one even alone)."""
    import socket

    import torch.distributed as dist

    if dist.is_initialized():
        return
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(port))
    dist.init_process_group("nccl" if device.startswith("cuda") else "gloo", rank=0, world_size=1)


def bench_grpo_step(model, tok, device: str, episodes: int, turns: int, new_tokens: int, params: int,
                    peak_tflops: float, decode: str) -> dict:
    """One whole GRPO step as the trainer runs it: *episodes* episodes of *turns* turns in groups of
    GROUP against the in-process env (the engine on the live policy), then the update on them."""
    import torch

    from agentgym_trainer_rl.algorithms import ALGORITHMS
    from agentgym_trainer_rl.batch import build_batch
    from agentgym_trainer_rl.policy import PolicyModule
    from agentgym_trainer_rl.update import UpdateSettings, Updater

    model.float()
    _peak_reset(device)
    start = time.perf_counter()
    roll, trajs = bench_rollout(model, tok, device, episodes, turns, new_tokens, decode)
    rollout_peak = roll["peak_gib"]
    rng = random.Random(0)
    for t in trajs:
        t.rewards = [0.0] * (len(t.turns) - 1) + [float(rng.random() < 0.5)]
    model.train()
    policy = PolicyModule(model).to(device)
    bf16 = device.startswith("cuda")
    fused = {"fused": True} if device.startswith("cuda") else {}
    optimizer = torch.optim.AdamW([p for p in policy.parameters() if p.requires_grad], lr=1e-6, **fused)
    updater = Updater(policy, optimizer, ALGORITHMS["grpo"], UpdateSettings(bf16=bf16, device=device, grad_accum=4))
    _peak_reset(device)
    update_start = time.perf_counter()
    metrics = updater.step(build_batch(trajs, pad_id=tok.pad_token_id or 0))
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    update_s = time.perf_counter() - update_start
    total = time.perf_counter() - start
    tokens = sum(len(t.token_ids) for t in trajs)
    mfu = 6 * params * metrics.get("run_tokens", tokens) / update_s / (peak_tflops * 1e12) if bf16 else None
    return {"phase": f"GRPO step: rollout {episodes} episodes x {turns} turns (decode={decode}) + update",
            "seconds": total, "tokens": tokens, "tokens_per_s": tokens / total, "mfu": mfu,
            "rollout_seconds": roll["seconds"], "update_seconds": update_s, "updates": metrics.get("updates"),
            "peak_gib": max(rollout_peak, _peak_gib(device)), "rollout_peak_gib": rollout_peak,
            "update_peak_gib": _peak_gib(device)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="tiny model on CPU, seconds")
    ap.add_argument("--device", default=None, help="default: cuda if available (cpu with --smoke)")
    ap.add_argument("--batches", default="64,256", help="rollout batch sizes")
    ap.add_argument("--shapes", default="135m,0.5b", help=f"model shapes for the rollout rows ({', '.join(SHAPES)}); "
                    "training runs on the last")
    ap.add_argument("--hf-static-batches", default="256",
                    help="batches with an HF generate() static-cache row (each compiles for 40-50 s); '' for none")
    ap.add_argument("--rollout-budget", type=float, default=360.0,
                    help="seconds after which rollout rows not yet started are skipped (the device call has 8 min)")
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--train-steps", type=int, default=3)
    ap.add_argument("--grad-accum", type=int, default=4)
    ap.add_argument("--peak-tflops", type=float, default=790.0, help="bf16 peak of the card (H200 measured: 790)")
    ap.add_argument("--train-batch", default="16x2048", help="the fixed update batch, ROWSxLENGTH ('' to skip)")
    ap.add_argument("--grpo-step", default="64x8", help="the end-to-end GRPO step, EPISODESxTURNS ('' to skip)")
    ap.add_argument("--tokenizer", default="smollm2-135m-instruct",
                    help="tokenizer folder or alias (a machine without the bundled model package: a folder)")
    args = ap.parse_args()

    import torch

    from agentgym_hf.loading import load_tokenizer

    if args.smoke:
        args.batches, args.turns, args.max_new_tokens, args.train_steps, args.grad_accum = "4,8", 2, 8, 1, 1
        args.shapes, args.hf_static_batches = "smoke", "8"
        args.train_batch, args.grpo_step = "4x96", "8x2"
        torch.set_num_threads(min(2, os.cpu_count() or 1))
    device = args.device or ("cuda" if torch.cuda.is_available() and not args.smoke else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        print("no CUDA device: run with --smoke (CPU) or on a GPU machine", file=sys.stderr)
        return 1
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    t0 = time.perf_counter()
    tok = load_tokenizer(args.tokenizer)
    batches = [int(b) for b in args.batches.split(",")]
    hf_static = {int(b) for b in args.hf_static_batches.split(",") if b}
    rows, sizes = [], {}
    for shape in args.shapes.split(","):
        model = _model(tok, shape, device, dtype)
        sizes[shape] = params = sum(p.numel() for p in model.parameters())
        shape_rows, train_trajs = rollout_rows(model, tok, device, shape, batches, args.turns, args.max_new_tokens,
                                               hf_static, t0 + args.rollout_budget)
        rows += shape_rows
    # training: the last shape's model, on its first plain rollout's trajectories
    for share in (True, False):  # whether running a group's prompt once pays off on this device
        try:
            rows.append(bench_train(model, tok, device, train_trajs, args.train_steps, args.grad_accum, params,
                                    args.peak_tflops, share))
        except Exception as exc:  # noqa: BLE001 - keep the rows measured so far; say what failed
            rows.append({"phase": f"train rl Updater (share_prefix={share})", "error": f"{type(exc).__name__}: {exc}"[:200]})
        rows[-1]["model"] = shape
    if args.train_batch:  # the update alone on a fixed batch, without and with FSDP (one process)
        n, length = (int(x) for x in args.train_batch.split("x"))
        for fsdp in (False, True):
            try:
                rows.append(bench_train_fixed(model, tok, device, n, length, args.train_steps, args.grad_accum,
                                              params, args.peak_tflops, fsdp))
            except Exception as exc:  # noqa: BLE001
                rows.append({"phase": f"train b{n}x{length} (fsdp={fsdp})", "error": f"{type(exc).__name__}: {exc}"[:200]})
            rows[-1]["model"] = shape
    if args.grpo_step:  # one whole step: rollout (the fast decode path where it runs) and update
        episodes, turns = (int(x) for x in args.grpo_step.split("x"))
        try:
            rows.append(bench_grpo_step(model, tok, device, episodes, turns, args.max_new_tokens, params,
                                        args.peak_tflops, "static" if device.startswith("cuda") else "plain"))
        except Exception as exc:  # noqa: BLE001
            rows.append({"phase": f"GRPO step {episodes}x{turns}", "error": f"{type(exc).__name__}: {exc}"[:200]})
        rows[-1]["model"] = shape
    name = torch.cuda.get_device_name() if device.startswith("cuda") else platform.processor() or platform.machine()
    head = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "device": f"{device} ({name})",
            "params": params, "shapes": sizes, "torch": torch.__version__, "smoke": args.smoke,
            "total_seconds": time.perf_counter() - t0,
            "note": ("'decode=static' rows: the hf engine's static decode mode (KV slots, CUDA graphs, continuous "
                     "batching; warm-up s includes graph capture); 'static cache' rows: HF generate() alone with its "
                     "compiled static cache")}
    print(f"bench/gpu.py on {head['device']}, models {', '.join(f'{k} {v / 1e6:.0f}M' for k, v in sizes.items())} "
          f"params (random init), torch {torch.__version__}, {head['date']}{' [SMOKE]' if args.smoke else ''}")
    print("| model | phase | tokens | seconds | tokens/s | MFU | peak mem (GiB) | notes |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r.get('model', '')} | {r['phase']} | - | - | - | - | - | {r['error']} |")
            continue
        mfu = f"{100 * r['mfu']:.1f}%" if r.get("mfu") is not None else "n/a"
        notes = [f"warm-up {r['warmup_seconds']:.1f}s"] if "warmup_seconds" in r else []
        notes += [f"{r['graphs']} graphs"] if r.get("graphs") else []
        notes += [f"FELL BACK: {r['fell_back']}"] if r.get("fell_back") else []
        print(f"| {r.get('model', '')} | {r['phase']} | {r['tokens']} | {r['seconds']:.2f} | {r['tokens_per_s']:.0f} | "
              f"{mfu} | {r['peak_gib']:.2f} | {', '.join(notes)} |")
    print(f"total {head['total_seconds']:.0f}s. {head['note']}.")
    if os.environ.get("OUT"):
        os.makedirs(os.environ["OUT"], exist_ok=True)
        with open(os.path.join(os.environ["OUT"], "gpu_bench.json"), "w") as f:
            json.dump({**head, "rows": rows}, f, indent=2, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
