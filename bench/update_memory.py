"""Memory of one rl update per trained token: the LM head on every position, on reply positions in one pass,
and on reply positions in chunks (the trainer's path, ``agentgym_hf.logprobs``).

    OMP_NUM_THREADS=1 python bench/update_memory.py --finetune full --finetune lora

A randomly initialised model of SmolLM2-135M's shape (vocabulary 49,152) runs one ``Updater.step``
(GRPO, one epoch, SGD: no optimizer state) on *rows* episodes of *prompt* context tokens and *reply*
generated tokens each. Each mode runs in a fresh process. Two figures per mode:

* ``peak``: the process's peak resident memory during the step, above its resident memory just before
  (CPU; weights, gradients and activations, everything the step allocates);
* ``saved``: the bytes autograd holds for the backward pass once the forward is done (distinct storages
  seen by a ``saved_tensors_hooks``, the weights left out): the activations alone.

``all positions`` is the plain Hugging Face path (``model(...).logits``, then a log-softmax everywhere);
``replies, one pass`` is the head on the loss-mask positions at once, as the trainer ran it before
chunking; ``replies, chunks`` runs at most ``agentgym_hf.logprobs.CHUNK`` (1024) of them at a time.
"""
from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time

MODES = ("all positions", "replies, one pass", "replies, chunks")


def smollm2_shape(seed: int = 0):
    """SmolLM2-135M's shape (its config.json), randomly initialised: memory does not depend on the weights."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    return LlamaForCausalLM(LlamaConfig(
        vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
        num_key_value_heads=3, max_position_embeddings=8192, rope_theta=100000.0, rms_norm_eps=1e-5,
        tie_word_embeddings=True))


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def child(mode: str, finetune: str, rows: int, prompt: int, reply: int) -> dict:
    import torch

    from agentgym_core.rollout.trajectory import Trajectory, Turn
    from agentgym_hf import logprobs
    from agentgym_trainer_rl import ALGORITHMS, EstimatorOptions, PolicyModule, Updater, UpdateSettings, build_batch

    torch.set_num_threads(1)
    lm = smollm2_shape()
    if finetune == "lora":  # the quickstart's adapters: every projection of the last 2 layers
        from agentgym_trainer_rl import apply_lora

        lm = apply_lora(lm, 16, 32, 0.0, ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                          "down_proj"], 2)
    lm.train()

    class AllPositions(PolicyModule):
        def forward(self, input_ids, attention_mask, loss_mask, with_entropy=True, plan=None):
            logp_all = torch.log_softmax(self.lm(input_ids=input_ids, attention_mask=attention_mask).logits.float(), -1)
            logp = logp_all[:, :-1].gather(-1, input_ids[:, 1:, None]).squeeze(-1)
            ent = -(logp_all.exp() * logp_all).sum(-1)[:, :-1]
            pad = logp.new_zeros(len(input_ids), 1)
            return {"logprobs": torch.cat([pad, logp], 1), "entropy": torch.cat([pad, ent], 1)}

    policy = (AllPositions if mode == MODES[0] else PolicyModule)(lm)
    if mode == MODES[1]:
        logprobs.CHUNK = 1 << 30
    opt = torch.optim.SGD([p for p in policy.parameters() if p.requires_grad], lr=1e-6)
    up = Updater(policy, opt, ALGORITHMS["grpo"], UpdateSettings(share_prefix=False, micro_batch_tokens=None),
                 EstimatorOptions())
    g = torch.Generator().manual_seed(1)
    trajs = []
    for i in range(rows):
        ids = torch.randint(0, 49152, (prompt + reply,), generator=g).tolist()
        trajs.append(Trajectory(episode_id=str(i), env_name="bench", task_id=0, group_id=0, token_ids=ids,
                                loss_mask=[0] * prompt + [1] * reply, logprobs=[0.0] * len(ids), prompt_len=prompt,
                                turns=[Turn(prompt, prompt + reply, "", "")], rewards=[float(i % 2)]))
    batch = build_batch(trajs)
    storages: dict[int, int] = {}
    weights = {p.untyped_storage().data_ptr() for p in policy.parameters()}

    def pack(t: torch.Tensor) -> torch.Tensor:
        ptr = t.untyped_storage().data_ptr()
        if ptr not in weights:
            storages[ptr] = t.untyped_storage().nbytes()
        return t

    before, peak_before = rss(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    t0 = time.perf_counter()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        metrics = up.step(batch)
    elapsed = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    trained = int(batch.loss_mask[:, 1:].sum())
    return {"mode": mode, "finetune": finetune, "trained": trained, "peak": peak - before, "saved": sum(storages.values()),
            "peak_above_load": peak > peak_before, "time_s": elapsed, "loss": metrics["loss"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--finetune", action="append", choices=["full", "lora"])
    ap.add_argument("--rows", type=int, default=2)
    ap.add_argument("--prompt", type=int, default=256, help="context tokens per episode (no loss)")
    ap.add_argument("--reply", type=int, default=1280, help="generated tokens per episode (loss mask 1)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        mode, finetune = json.loads(args.child)
        print(json.dumps(child(mode, finetune, args.rows, args.prompt, args.reply)))
        return
    mib, kib = 1024**2, 1024
    print(f"# {platform.processor() or platform.machine()}, {platform.system()}, python {platform.python_version()}, "
          f"{time.strftime('%Y-%m-%d')}; SmolLM2-135M shape, {args.rows} episodes x ({args.prompt} context + "
          f"{args.reply} reply) tokens, one GRPO update")
    print("| finetune | LM head | trained tokens | peak MiB | peak KiB/token | saved MiB | saved KiB/token | time s |")
    print("|---|---|---|---|---|---|---|---|")
    for finetune in args.finetune or ["full"]:
        for mode in MODES:
            cmd = [sys.executable, __file__, "--child", json.dumps([mode, finetune]), "--rows", str(args.rows),
                   "--prompt", str(args.prompt), "--reply", str(args.reply)]
            out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines()[-1])
            n = out["trained"]
            flag = "" if out["peak_above_load"] else " (under the load peak)"
            print(f"| {finetune} | {mode} | {n} | {out['peak'] / mib:.0f}{flag} | {out['peak'] / n / kib:.0f} | "
                  f"{out['saved'] / mib:.0f} | {out['saved'] / n / kib:.0f} | {out['time_s']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
