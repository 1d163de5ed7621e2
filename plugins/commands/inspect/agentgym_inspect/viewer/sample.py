"""A synthetic run directory with the trainer's exact layout, for demos, tests and benchmarks.

``agentgym view --sample DIR`` writes one and opens it; the viewer, report and eval tests use
it so they do not need a training run. Episodes are real token sequences of a tiny word-level
tokenizer (saved as ``tokenizer.json`` in the checkpoints) with the loss mask set on the
model's turns, or plain integer ids when the ``tokenizers`` package is absent.
"""
from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from agentgym_core.evaluation import summarize

WORDS = (
    "go to the red blue green ball key door box open pick up drop turn left right forward "
    "you see a wall in front of room nothing happens done success goal reached invalid action "
    "think i should first then Thought: Action: system: user: assistant: Task: find"
).split()
ACTIONS = ["go forward", "turn left", "turn right", "pick up the key", "open the door", "go to the red ball"]
OBSERVATIONS = [
    "you see a wall in front of you",
    "you see a red ball",
    "nothing happens",
    "you see a door",
    "you pick up the key",
]
INSTRUCTION = "Task: go to the red ball . Thought: ... Action: ..."


class _Vocab:
    """Word-level ids; with ``tokenizers`` installed, the same vocabulary as a real tokenizer."""

    def __init__(self) -> None:
        vocab = ["[UNK]", "\n"] + sorted(set(WORDS) | {".", "..."} | {w for t in ACTIONS + OBSERVATIONS for w in t.split()})
        self.ids = {w: i for i, w in enumerate(vocab)}

    def encode(self, text: str) -> list[int]:
        return [self.ids.get(w, 0) for w in text.split()]

    def save(self, folder: Path) -> bool:
        try:
            from tokenizers import Tokenizer, models, pre_tokenizers
        except ImportError:
            return False
        tok = Tokenizer(models.WordLevel(vocab=self.ids, unk_token="[UNK]"))
        tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
        folder.mkdir(parents=True, exist_ok=True)
        tok.save(str(folder / "tokenizer.json"))
        return True


def horizon_at(step: int, rounds: tuple[int, ...], step_interval: int) -> int:
    """ScalingInter-RL's horizon: ``rounds[i]`` for steps in stage *i* (1-based steps)."""
    return rounds[min((step - 1) // step_interval, len(rounds) - 1)]


def sample_episode(
    vocab: _Vocab, rng: random.Random, *, step: int, index: int, task_id: int, max_turns: int, p_success: float
) -> dict[str, Any]:
    """One trajectory dict: prompt, then model turns (mask 1) and observations (mask 0)."""
    ids: list[int] = []
    mask: list[int] = []

    def add(text: str, m: int) -> tuple[int, int]:
        new = vocab.encode(text)
        start = len(ids)
        ids.extend(new)
        mask.extend([m] * len(new))
        return start, len(ids)

    first_obs = rng.choice(OBSERVATIONS)
    add(f"system: {INSTRUCTION} user: {first_obs} assistant:", 0)
    prompt_len = len(ids)
    success = rng.random() < p_success
    n_turns = rng.randint(1, max_turns) if success else max_turns if rng.random() < 0.6 else rng.randint(1, max_turns)
    turns = []
    for t in range(n_turns):
        action = rng.choice(ACTIONS)
        text = f"Thought: i should {action} Action: {action}"
        start, end = add(text, 1)
        last = t == n_turns - 1
        done = last and (success or n_turns < max_turns)
        obs = "goal reached . success" if (last and success) else rng.choice(OBSERVATIONS)
        env_reward = 1.0 if (last and success) else 0.0
        turns.append({
            "start": start, "end": end, "text": text, "action": action, "observation": obs,
            "env_reward": env_reward, "done": done, "info": {"success": success} if done else {},
            "parse_error": None,
        })
        if not last:
            add(f"user: {obs} assistant:", 0)
    end_reason = "done" if (success or n_turns < max_turns) else "max_turns"
    rewards = [0.0] * (n_turns - 1) + [1.0 if success else 0.0]
    return {
        "episode_id": f"s{step}-e{index}",
        "env_name": "sample",
        "task_id": task_id,
        "group_id": index // 4,
        "token_ids": ids,
        "loss_mask": mask,
        "logprobs": [round(-rng.random(), 4) if m else 0.0 for m in mask],
        "prompt_len": prompt_len,
        "turns": turns,
        "end_reason": end_reason,
        "success": success,
        "score": sum(t["env_reward"] for t in turns),
        "max_turns": max_turns,
        "rewards": rewards,
        "failed": False,
        "error": None,
        "prefill_tokens": len(ids),
        "template_fallback": False,
        "step": step,
    }


def write_sample_run(
    path: str | Path,
    *,
    steps: int = 6,
    episodes_per_step: int = 8,
    rounds: tuple[int, ...] = (2, 4, 6),
    step_interval: int = 2,
    checkpoint_every: int = 3,
    seed: int = 0,
    tokenizer: bool = True,
    categories: dict[int, str] | None = None,
) -> Path:
    """Write a run directory like the trainer's into *path* (created) and return it."""
    rng = random.Random(seed)
    root = Path(path)
    for sub in ("trajectories", "checkpoints", "eval", "tb"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    vocab = _Vocab()
    (root / "config.yaml").write_text(
        "run:\n  name: {}\n  output_dir: {}\n  seed: {}\nenv:\n  name: sample\n"
        "scheduler:\n  name: scaling_inter\n  rounds: [{}]\n  step_interval: {}\n"
        "model:\n  path: tiny-random\n".format(root.name, root.parent, seed, ", ".join(map(str, rounds)), step_interval),
        encoding="utf-8",
    )
    with open(root / "metrics.jsonl", "w", encoding="utf-8") as metrics:
        for step in range(1, steps + 1):
            horizon = horizon_at(step, rounds, step_interval)
            p = min(0.9, 0.15 + 0.6 * step / max(steps, 1))
            eps = [
                sample_episode(vocab, rng, step=step, index=i, task_id=rng.randrange(100), max_turns=horizon, p_success=p)
                for i in range(episodes_per_step)
            ]
            with open(root / "trajectories" / f"step_{step:06d}.jsonl", "w", encoding="utf-8") as f:
                for ep in eps:
                    f.write(json.dumps(ep) + "\n")
            turns = [len(e["turns"]) for e in eps]
            row = {
                "step": step,
                "reward_mean": sum(sum(e["rewards"]) for e in eps) / len(eps),
                "success_rate": sum(e["success"] for e in eps) / len(eps),
                "turns_mean": sum(turns) / len(turns),
                "turns_max": max(turns),
                "horizon": horizon,
                "kl": 0.002 * step + rng.random() * 0.001,
                "entropy": 1.5 * 0.97 ** step,
                "loss": 0.5 / step,
                "tokens_per_s": 400 + 20 * rng.random(),
                "step_time_s": 2.0 + rng.random(),
                "episodes": len(eps),
                "env_failures": 0,
                "lr": 1e-6,
            }
            metrics.write(json.dumps(row) + "\n")
            if step % checkpoint_every == 0 or step == steps:
                ckpt = root / "checkpoints" / f"step_{step:06d}"
                ckpt.mkdir(exist_ok=True)
                (ckpt / "config.json").write_text("{}", encoding="utf-8")
                if tokenizer:
                    vocab.save(ckpt)
                (root / "checkpoints" / "latest").write_text(ckpt.name + "\n", encoding="utf-8")
    for name, p in (("before", 0.2), ("after", 0.6)):
        eps = [
            sample_episode(vocab, rng, step=0, index=i, task_id=1000 + i // 2, max_turns=rounds[-1], p_success=p)
            for i in range(16)
        ]
        summary = summarize(eps, k=2, categories=categories)
        (root / "eval" / f"{name}.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return root
