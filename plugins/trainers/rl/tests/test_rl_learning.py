"""A tiny random model learns a one-turn and a two-turn task with each algorithm.

Episodes are sampled straight from the model (no env server, no chat template) so that
only the trainer's batch -> advantages -> update path is under test. The two-turn task ends
on an observation and pays its reward only on the last turn.
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from agentgym_core.rollout.trajectory import Trajectory, Turn  # noqa: E402
from agentgym_trainer_rl.algorithms import ALGORITHMS, EstimatorOptions  # noqa: E402
from agentgym_trainer_rl.batch import build_batch  # noqa: E402
from agentgym_trainer_rl.policy import PolicyModule  # noqa: E402
from agentgym_trainer_rl.update import Updater, UpdateSettings  # noqa: E402

VOCAB = 8
OBS = [6, 7]


def tiny_lm(seed: int = 0):
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32)
    return transformers.LlamaForCausalLM(cfg)


@torch.no_grad()
def sample(lm, prefix: torch.Tensor) -> torch.Tensor:
    logits = lm(input_ids=prefix).logits[:, -1].float()
    return torch.multinomial(torch.softmax(logits, -1), 1)


def play(lm, turns: int, tasks: int, group: int) -> list[Trajectory]:
    """Task t in {2, 3}: answer t + 2 at every turn; reward = fraction right, on the last turn."""
    task = torch.randint(2, 4, (tasks,)).repeat_interleave(group)[:, None]
    seq = torch.cat([torch.ones_like(task), task], dim=1)
    spans, right = [], torch.zeros(len(task))
    for _ in range(turns):
        action = sample(lm, seq)
        right += (action[:, 0] == task[:, 0] + 2).float()
        spans.append((seq.shape[1], seq.shape[1] + 1))
        seq = torch.cat([seq, action, torch.tensor(OBS).expand(len(task), 2)], dim=1)  # ends on an observation
    out = []
    for i in range(len(task)):
        mask = [0] * seq.shape[1]
        for s, _ in spans:
            mask[s] = 1
        reward = float(right[i]) / turns
        out.append(Trajectory(
            episode_id=str(i), env_name="toy", task_id=int(task[i]), group_id=i // group,
            token_ids=seq[i].tolist(), loss_mask=mask, logprobs=[0.0] * len(mask), prompt_len=2,
            turns=[Turn(s, e, "", "") for s, e in spans], rewards=[0.0] * (turns - 1) + [reward],
        ))
    return out


def train(name: str, turns: int, steps: int = 20) -> list[float]:
    torch.set_num_threads(1)  # tiny tensors: more threads only contend on a shared machine
    lm = tiny_lm()
    algo = ALGORITHMS[name]
    policy = PolicyModule(lm, value_head=algo.needs_critic)
    opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
    updater = Updater(policy, opt, algo, UpdateSettings(ppo_epochs=1, mini_batches=2, grad_accum=1),
                      EstimatorOptions(gamma=1.0, lam=1.0))
    history = []
    for _ in range(steps):
        trajs = play(lm, turns, tasks=8, group=4)
        history.append(sum(t.rewards[-1] for t in trajs) / len(trajs))
        metrics = updater.step(build_batch(trajs))
        assert metrics["nonfinite_skipped"] == 0
    return history


@pytest.mark.slow
@pytest.mark.parametrize("turns", [1, 2])
@pytest.mark.parametrize("name", ["ppo", "grpo", "rloo", "reinforce_pp"])
def test_tiny_model_learns(name, turns):
    torch.manual_seed(1)
    history = train(name, turns)
    first, last = sum(history[:5]) / 5, sum(history[-5:]) / 5
    assert first < 0.4, history  # random start: about 1/8 right
    assert last > first + 0.3, f"{name}, {turns} turn(s): reward did not rise: {[round(h, 2) for h in history]}"


@pytest.mark.parametrize("agg", ["token", "sequence"])
def test_grad_accumulation_matches_one_big_batch(agg):
    """Micro-batches (through accelerate's no_sync path) add up to the same update as one batch."""
    from accelerate import Accelerator

    torch.manual_seed(0)
    trajs = play(tiny_lm(), turns=2, tasks=4, group=2)
    trajs[0].token_ids = trajs[0].token_ids[:-1]  # unequal lengths: padding must not count
    trajs[0].loss_mask = trajs[0].loss_mask[:-1]
    params = []
    for accum, acc in ((1, None), (4, Accelerator(cpu=True))):
        lm = tiny_lm(seed=5)
        policy = PolicyModule(lm)
        opt = torch.optim.SGD(policy.parameters(), lr=0.1)
        up = Updater(policy, opt, ALGORITHMS["reinforce_pp"], UpdateSettings(grad_accum=accum, loss_agg=agg, max_grad_norm=1e9),
                     EstimatorOptions(), accelerator=acc)
        for t in trajs:
            t.rewards = [0.0, float(t.task_id == 2)]
        up.step(build_batch(trajs))
        params.append(torch.cat([p.detach().flatten() for p in policy.parameters()]))
    assert torch.allclose(params[0], params[1], atol=1e-6)
