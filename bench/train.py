"""Training throughput of the ``rl`` trainer's update vs TRL's GRPOTrainer on the same batch shape.

    python bench/train.py --model tiny --model 135m --episodes 8 --prompt 128 --completion 32

Ours: ``Updater.step`` (score -> GRPO advantages -> clipped update) on a batch of *episodes*
sequences of prompt + completion tokens, the members of a group sharing their prompt (as in
GRPO), twice: with the default prefix sharing (a group's prompt runs once) and without it. TRL: ``GRPOTrainer`` steps with the same model,
batch, prompt and completion lengths (completions forced to full length); the time TRL spends
generating is measured by wrapping its generation method and subtracted, so both columns
are training tokens (prompt + completion) per second of optimisation. Full fine-tuning, fp32,
no KL, one PPO epoch. TRL is not a project dependency: ``pip install trl`` to compare.
"""
from __future__ import annotations

import argparse
import platform
import time

import torch


def load(name: str):
    from agentgym_hf.loading import load_model, load_tokenizer, tiny_random_model

    if name == "tiny":
        tok = load_tokenizer("smollm2-135m-instruct")
        return tiny_random_model(tok, seed=0, hidden_size=64, intermediate_size=128), tok
    return load_model("smollm2-135m-instruct", dtype="fp32")


def ours(name: str, episodes: int, group: int, prompt: int, completion: int, steps: int, share: bool,
         lora_layers: int = 0, system: int = 0) -> float:
    from agentgym_core.rollout.trajectory import Trajectory, Turn
    from agentgym_trainer_rl import ALGORITHMS, EstimatorOptions, PolicyModule, Updater, UpdateSettings, build_batch

    lm, _ = load(name)
    if lora_layers:  # the quickstart's adapters: every projection of the last N layers
        from agentgym_trainer_rl import apply_lora

        targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
        lm = apply_lora(lm, 16, 32, 0.0, targets, lora_layers)
    lm.train()
    policy = PolicyModule(lm)
    opt = torch.optim.AdamW([p for p in policy.parameters() if p.requires_grad], lr=1e-6)
    up = Updater(policy, opt, ALGORITHMS["grpo"], UpdateSettings(share_prefix=share), EstimatorOptions())
    vocab = lm.config.vocab_size
    times = []
    for s in range(steps + 1):
        trajs = []
        common = torch.randint(0, vocab, (system,)).tolist()  # a system prompt every episode starts with
        for i in range(episodes):
            if i % group == 0:
                head = common + torch.randint(0, vocab, (prompt - system,)).tolist()
            ids = head + torch.randint(0, vocab, (completion,)).tolist()
            trajs.append(Trajectory(
                episode_id=str(i), env_name="bench", task_id=i // group, group_id=i // group, token_ids=ids,
                loss_mask=[0] * prompt + [1] * completion, logprobs=[0.0] * len(ids), prompt_len=prompt,
                turns=[Turn(prompt, prompt + completion, "", "")], rewards=[float(torch.rand(()) > 0.5)]))
        t = time.perf_counter()
        up.step(build_batch(trajs))
        if s:  # the first step warms up
            times.append(time.perf_counter() - t)
    return episodes * (prompt + completion) * len(times) / sum(times)


def trl(name: str, episodes: int, group: int, prompt: int, completion: int, steps: int) -> tuple[float, float] | str:
    try:
        from datasets import Dataset
        from trl import GRPOConfig, GRPOTrainer
    except ImportError as exc:
        return f"not installed ({exc.name})"
    lm, tok = load(name)
    words = "move left right up down look go pick drop open".split()
    prompts = []
    for i in range(episodes * (steps + 1)):
        text = " ".join(words[(i + j) % len(words)] for j in range(prompt * 2))
        ids = tok(text)["input_ids"][:prompt]
        prompts.append(tok.decode(ids))
    args = GRPOConfig(
        output_dir="/tmp/bench-trl", per_device_train_batch_size=episodes, num_generations=group,
        max_completion_length=completion, learning_rate=1e-6, beta=0.0, max_steps=steps + 1, logging_steps=1,
        report_to="none", use_cpu=True, bf16=False, save_strategy="no", num_iterations=1,
        generation_kwargs={"min_new_tokens": completion}, seed=0,
    )
    trainer = GRPOTrainer(model=lm, reward_funcs=[lambda completions, **kw: [float(len(c) % 2) for c in completions]],
                          args=args, train_dataset=Dataset.from_dict({"prompt": prompts}), processing_class=tok)
    gen_time = [0.0]
    original = trainer._generate_and_score_completions

    def timed(*a, **kw):
        t = time.perf_counter()
        try:
            return original(*a, **kw)
        finally:
            gen_time[0] += time.perf_counter() - t

    trainer._generate_and_score_completions = timed
    step_times: list[tuple[float, float]] = []
    from transformers import TrainerCallback

    class Clock(TrainerCallback):
        def on_step_begin(self, *a, **kw):
            self.t, self.g = time.perf_counter(), gen_time[0]

        def on_step_end(self, *a, **kw):
            step_times.append((time.perf_counter() - self.t, gen_time[0] - self.g))

    trainer.add_callback(Clock())
    trainer.train()
    measured = step_times[1:]
    train_time = sum(total - gen for total, gen in measured)
    gen = sum(g for _, g in measured) / len(measured)
    return episodes * (prompt + completion) * len(measured) / train_time, gen


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", action="append", choices=["tiny", "135m"])
    p.add_argument("--episodes", type=int, default=8)
    p.add_argument("--group", type=int, default=4)
    p.add_argument("--prompt", type=int, default=128)
    p.add_argument("--completion", type=int, default=32)
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--skip-trl", action="store_true")
    p.add_argument("--system", type=int, default=0,
                   help="ours only: the first N prompt tokens are the same in every episode (a system prompt)")
    p.add_argument("--lora-layers", type=int, default=0,
                   help="ours only: LoRA (r 16) on the last N layers instead of full fine-tuning; implies --skip-trl")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    print(f"# {platform.processor() or platform.machine()}, {torch.get_num_threads()} threads, torch {torch.__version__}; "
          f"{a.episodes} episodes (groups of {a.group}) x ({a.prompt} prompt + {a.completion} completion) tokens, "
          f"{a.steps} timed steps, {f'LoRA on {a.lora_layers} layers' if a.lora_layers else 'full fine-tuning'}"
          f"{f', {a.system} prompt tokens common to all' if a.system else ''}")
    print("| model | ours tokens/s | ours, no prefix sharing | TRL GRPOTrainer tokens/s | ratio | ratio, no sharing "
          "| TRL generation s/step (excluded) |")
    print("|---|---|---|---|---|---|---|")
    for name in a.model or ["tiny", "135m"]:
        shape = (name, a.episodes, a.group, a.prompt, a.completion, a.steps)
        o, plain = (ours(*shape, share=s, lora_layers=a.lora_layers, system=a.system) for s in (True, False))
        t = "skipped" if a.skip_trl or a.lora_layers or a.system else trl(*shape)
        if isinstance(t, tuple):
            print(f"| {name} | {o:.0f} | {plain:.0f} | {t[0]:.0f} | {o / t[0]:.2f}x | {plain / t[0]:.2f}x | {t[1]:.1f} |",
                  flush=True)
        else:
            print(f"| {name} | {o:.0f} | {plain:.0f} | {t} | - | - | - |", flush=True)


if __name__ == "__main__":
    main()
