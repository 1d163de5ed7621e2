"""Rows with nothing to learn skip the update's forward and backward (``skip_zero_advantage``): the weights
after each AdamW step equal those of running every row (to 1e-6), the optimizer still steps, and rows that
carry a KL, entropy or value term run."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from agentgym_core.rollout.trajectory import Trajectory, Turn  # noqa: E402
from agentgym_trainer_rl.algorithms import ALGORITHMS, EstimatorOptions  # noqa: E402
from agentgym_trainer_rl.batch import build_batch  # noqa: E402
from agentgym_trainer_rl.policy import PolicyModule, frozen_copy  # noqa: E402
from agentgym_trainer_rl.update import Updater, UpdateSettings  # noqa: E402

VOCAB = 48


def tiny_lm(seed: int = 0):
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                                   num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128)
    return transformers.LlamaForCausalLM(cfg)


def group(task: int, rewards: list[float], seed: int, prompt: int = 20, failed: int = -1) -> list[Trajectory]:
    """One task's episodes (a shared prompt, then 1-2 turns of replies of various lengths and observations)."""
    g = torch.Generator().manual_seed(seed)
    head = torch.randint(1, VOCAB, (prompt,), generator=g).tolist()
    out = []
    for k, reward in enumerate(rewards):
        ids, mask, turns = list(head), [0] * prompt, []
        for _ in range(1 + k % 2):
            reply = torch.randint(1, VOCAB, (3 + k,), generator=g).tolist()
            turns.append(Turn(len(ids), len(ids) + len(reply), "", ""))
            ids += reply + torch.randint(1, VOCAB, (3,), generator=g).tolist()
            mask += [1] * len(reply) + [0] * 3
        out.append(Trajectory(episode_id=f"{task}-{k}", env_name="toy", task_id=task, group_id=task, token_ids=ids,
                              loss_mask=mask, logprobs=[-1.0] * len(ids), prompt_len=prompt, turns=turns,
                              rewards=[0.0] * (len(turns) - 1) + [reward], failed=k == failed))
    return out


INFORMATIVE = group(0, [1.0, 0.0, 0.0], 1) + group(1, [0.0, 1.0, 0.0], 2)
NO_SIGNAL = group(0, [1.0, 1.0, 1.0], 3) + group(1, [0.0, 0.0, 0.0], 4)
HALF = group(0, [1.0, 0.0, 0.0], 5) + group(1, [0.5, 0.5, 0.5], 6)


def updater(skip: bool, algorithm: str = "grpo", reference: bool = False, **opts) -> Updater:
    torch.set_num_threads(1)
    policy = PolicyModule(tiny_lm(5), value_head=ALGORITHMS[algorithm].needs_critic)
    params = [p for p in policy.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1)
    ref = PolicyModule(frozen_copy(tiny_lm(7))) if reference else None
    settings = UpdateSettings(skip_zero_advantage=skip, min_shared_prefix=8, **opts)
    return Updater(policy, optimizer, ALGORITHMS[algorithm], settings, EstimatorOptions(), reference=ref)


def weights(up: Updater) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in up.policy.named_parameters()}


def assert_same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor], atol: float = 1e-6) -> None:
    assert a.keys() == b.keys()
    for name in a:
        assert torch.allclose(a[name], b[name], atol=atol, rtol=0), f"{name}: {(a[name] - b[name]).abs().max():.2e}"


def steps(skip: bool, batches: list[list[Trajectory]], **opts) -> tuple[Updater, list[dict[str, float]], list]:
    up = updater(skip, **opts)
    torch.manual_seed(11)  # the same row orders in both runs
    metrics, after = [], []
    for trajs in batches:
        metrics.append(up.step(build_batch(trajs)))
        after.append(weights(up))
    return up, metrics, after


def test_a_step_without_advantage_runs_nothing_and_steps_as_zero_gradients_would():
    """Step 2 has no signal at all: no forward or backward runs, yet AdamW moves the weights (its moments
    and weight decay) exactly as the unskipped step with its all-zero gradients does."""
    opts = dict(grad_accum=2)
    _, m_skip, w_skip = steps(True, [INFORMATIVE, NO_SIGNAL], **opts)
    _, m_full, w_full = steps(False, [INFORMATIVE, NO_SIGNAL], **opts)
    assert m_skip[0]["skipped_rows"] == 0 and m_full[1]["skipped_rows"] == 0
    assert m_skip[1]["skipped_rows"] == 6 and m_skip[1]["skipped_micro_batches"] == 2
    assert m_skip[1]["run_tokens"] == 0 < m_full[1]["run_tokens"]
    assert m_skip[1]["updates"] == m_full[1]["updates"] == 1
    assert m_skip[1]["grad_norm"] == m_full[1]["grad_norm"] == 0.0
    assert m_skip[1]["pg_loss"] == pytest.approx(m_full[1]["pg_loss"], abs=1e-9)
    assert m_skip[1]["clipfrac"] == m_full[1]["clipfrac"] == 0.0
    for a, b in zip(w_skip, w_full):
        assert_same(a, b)
    moved = max(float((w_skip[1][n] - w_skip[0][n]).abs().max()) for n in w_skip[0])
    assert moved > 1e-4, "the optimizer did not step on the zero-advantage batch"


def test_a_group_of_equal_penalties_skips_though_its_float32_mean_is_an_ulp_off():
    """Eight -0.3 returns (a format penalty each) have nothing to learn: their rows skip, and the step's
    weights are those of running every row. Before the estimator treated equal returns as equal, their
    advantage was -0.029 on every token and they ran."""
    batch = group(0, [-0.3] * 8, 8) + group(1, [0.0, 1.0, 0.0], 9)
    _, m_skip, w_skip = steps(True, [batch], grad_accum=2)
    _, m_full, w_full = steps(False, [batch], grad_accum=2)
    assert m_skip[0]["skipped_rows"] == 8 and m_full[0]["skipped_rows"] == 0
    assert_same(w_skip[0], w_full[0])


@pytest.mark.parametrize("grad_accum,rows,micros", [(2, 3, 1), (1, 3, 0)])
def test_only_the_rows_without_advantage_skip(grad_accum, rows, micros):
    """Group 1 has no signal. With 2 micro-batches (a group each: groups stay together) one is skipped whole;
    with one, its 3 rows are cut from it. Two PPO epochs and two steps of AdamW: the same weights."""
    opts = dict(grad_accum=grad_accum, ppo_epochs=2)
    _, m_skip, w_skip = steps(True, [HALF, INFORMATIVE, HALF], **opts)
    _, m_full, w_full = steps(False, [HALF, INFORMATIVE, HALF], **opts)
    for step in (0, 2):
        assert m_skip[step]["skipped_rows"] == 2 * rows  # each epoch counts
        assert m_skip[step]["skipped_micro_batches"] == 2 * micros
        assert 0 < m_skip[step]["run_tokens"] < m_full[step]["run_tokens"]
        for key in ("pg_loss", "clipfrac", "loss", "grad_norm", "sampler_logp_diff"):
            assert m_skip[step][key] == pytest.approx(m_full[step][key], rel=1e-5, abs=1e-7), key
    assert m_skip[1]["skipped_rows"] == 0
    for a, b in zip(w_skip, w_full):
        assert_same(a, b)


@pytest.mark.parametrize("case", ["kl loss", "kl reward", "entropy", "value head"])
def test_rows_with_another_loss_term_are_not_skipped(case):
    """Zero advantages everywhere, but a KL term in the loss, an entropy bonus or PPO's value loss still trains
    each row, and a KL penalty in the reward is measured on each: every row runs."""
    opts = {"kl loss": dict(kl_coef=0.1, reference=True), "kl reward": dict(kl_coef=0.1, kl_mode="reward", reference=True),
            "entropy": dict(entropy_coef=0.01), "value head": dict(algorithm="ppo")}[case]
    up = updater(True, **opts)
    batch = build_batch(NO_SIGNAL)
    up.score(batch)
    up.advantages(batch)
    batch.advantages.zero_()
    before = weights(up)
    metrics = up.update(batch)
    assert metrics["skipped_rows"] == 0 and metrics["skipped_micro_batches"] == 0
    if case == "kl reward":  # no gradient, but the step's KL (the adaptive controller's input) is measured on every row
        assert metrics["kl"] > 0
    else:
        assert metrics["grad_norm"] > 0
        assert max(float((weights(up)[n] - before[n]).abs().max()) for n in before) > 1e-4
    plain = updater(True)  # the same zero advantages with the policy loss alone: all skipped
    metrics = plain.update(batch)
    assert metrics["skipped_rows"] == len(batch) and metrics["grad_norm"] == 0.0


def test_rows_without_a_trained_token_skip_even_with_kl():
    """A failed episode has no trained token: nothing of it reaches the loss, whatever the terms."""
    trajs = group(0, [1.0, 0.0, 0.0], 1, failed=2) + group(1, [0.0, 1.0, 0.0], 2)
    opts = dict(kl_coef=0.1, reference=True, entropy_coef=0.01)
    _, m_skip, w_skip = steps(True, [trajs], **opts)
    _, m_full, w_full = steps(False, [trajs], **opts)
    assert m_skip[0]["skipped_rows"] == 1 and m_full[0]["skipped_rows"] == 0
    for key in ("kl", "entropy", "pg_loss", "loss"):
        assert m_skip[0][key] == pytest.approx(m_full[0][key], rel=1e-5, abs=1e-7), key
    assert_same(w_skip[0], w_full[0])


def test_several_processes_run_every_row():
    """Under DDP/FSDP each rank must run every micro-batch's backward (its gradient all-reduce)."""
    up = updater(True)
    assert up.skips_idle_rows
    up.accelerator = SimpleNamespace(num_processes=2)
    assert not up.skips_idle_rows
    assert not updater(False).skips_idle_rows
