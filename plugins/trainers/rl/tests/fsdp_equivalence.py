"""Run N policy updates on a fixed global batch and save the resulting weights (a test driver).

    python fsdp_equivalence.py OUT.pt [lora|full]                 # one process, the whole batch
    torchrun --nproc_per_node 2 fsdp_equivalence.py OUT.pt full   # FSDP, each rank its half

Both see the same global batch (4 GRPO groups of 2 episodes, every row the same length so a
process's token mean equals the global one); a rank takes whole groups, as the trainer does.
The test compares the saved weights of the two runs.
"""
from __future__ import annotations

import os
import zlib
import sys

import torch

STEPS = 3


def trajectories(vocab: int) -> list:
    from agentgym_core.rollout.trajectory import Trajectory, Turn

    gen = torch.Generator().manual_seed(11)
    out = []
    for i in range(8):
        ids = torch.randint(3, vocab, (40,), generator=gen).tolist()
        mask = [0] * 12 + [1] * 8 + [0] * 8 + [1] * 12
        turns = [Turn(start=12, end=20, text="", action="a"), Turn(start=28, end=40, text="", action="b")]
        t = Trajectory(episode_id=f"e{i}", env_name="toy", task_id=i // 2, group_id=i // 2, token_ids=ids,
                       loss_mask=mask, logprobs=[0.0] * 40, prompt_len=12, turns=turns)
        t.rewards = [0.0, float((i * 7) % 3)]  # varied returns within each group
        out.append(t)
    return out


def main(out_path: str, finetune: str) -> None:
    from agentgym_hf.loading import tiny_random_model
    from agentgym_trainer_rl.algorithms import ALGORITHMS, EstimatorOptions
    from agentgym_trainer_rl.batch import build_batch
    from agentgym_trainer_rl.config import UpdateConfig
    from agentgym_trainer_rl.fsdp import FSDPStrategy
    from agentgym_trainer_rl.policy import PolicyModule, apply_lora
    from agentgym_trainer_rl.update import Updater, UpdateSettings

    torch.set_num_threads(1)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        torch.distributed.init_process_group("gloo")

    class Tok:  # tiny_random_model only reads these
        bos_token_id, eos_token_id, pad_token_id = 1, 2, 0

        def __len__(self) -> int:
            return 96

    lm = tiny_random_model(Tok(), seed=5)
    if finetune == "lora":
        lm = apply_lora(lm, 4, 8, 0.0, ["q_proj", "v_proj"])
        for name, p in lm.named_parameters():  # non-zero B: the adapters change the output from step 1
            if "lora_B" in name:
                torch.nn.init.normal_(p, std=0.02, generator=torch.Generator().manual_seed(zlib.crc32(name.encode())))
    lm.train()
    policy = PolicyModule(lm)
    start = {k: v.detach().clone() for k, v in policy.state_dict().items()}
    strategy = None
    if world > 1:
        from accelerate import Accelerator

        strategy = FSDPStrategy(Accelerator(cpu=True), bf16=False, offload=False)
        strategy.shard(policy)
    optimizer = torch.optim.AdamW([p for p in policy.parameters() if p.requires_grad], lr=1e-2)
    opts = UpdateSettings(**{f.name: getattr(UpdateConfig(), f.name) for f in __import__("dataclasses").fields(UpdateConfig)},
                         bf16=False, device="cpu")
    opts.ppo_epochs, opts.mini_batches, opts.grad_accum = 2, 1, 2  # old log-probs differ from current in epoch 2
    updater = Updater(policy, optimizer, ALGORITHMS["grpo"], opts, EstimatorOptions(), strategy, None)
    trajs = trajectories(96)
    mine = [t for t in trajs if t.group_id % world == rank]
    torch.manual_seed(0)
    for _ in range(STEPS):
        updater.step(build_batch(mine, pad_id=0))
    if strategy is not None:
        state = strategy.full_state_dict(policy)
    else:
        state = {k: v.detach().clone() for k, v in policy.state_dict().items()}
    if rank == 0:
        torch.save({"start": start, "end": state}, out_path)
    if world > 1:
        from agentgym_core.cli.train_cmd import end_process_group

        end_process_group()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "full")
