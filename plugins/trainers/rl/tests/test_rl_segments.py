"""Replies sampled from another context than their episode's prefix (a history window, a pinned plan)
are scored under exactly that context. Episodes are built by hand, their contexts chosen by core's own
window policy; every number the update produces is checked against scoring each turn on its own (one
forward pass of its context and reply), to 1e-5."""
from __future__ import annotations

import dataclasses

import pytest

torch = pytest.importorskip("torch")

from agentgym_core.rollout.context import EpisodeView, WindowContext  # noqa: E402
from agentgym_core.rollout.trajectory import Trajectory, Turn  # noqa: E402

PROMPT, REPLY, DELTA, TURNS, VOCAB = 20, 4, 3, 6, 96


class Tok:  # what tiny_random_model reads of a tokenizer
    bos_token_id, eos_token_id, pad_token_id = 1, 2, 0

    def __len__(self) -> int:
        return VOCAB


def _model():
    from agentgym_hf.loading import tiny_random_model
    from agentgym_trainer_rl.policy import PolicyModule

    torch.manual_seed(0)
    return PolicyModule(tiny_random_model(Tok(), seed=3))


def _episode(i: int, group: int, policy, pin: int | None = None, head=None) -> Trajectory:
    """A 6-turn episode; turn k's context is what *policy* shows after k turns (None: the whole prefix)."""
    gen = torch.Generator().manual_seed(100 + i)
    ids = list(head) if head is not None else torch.randint(3, VOCAB, (PROMPT,), generator=gen).tolist()
    turns, starts = [], []
    for k in range(TURNS):
        view = EpisodeView(list(ids), PROMPT, tuple(starts), pinned=pin if pin is not None and pin < k else None)
        spans = policy.spans(view)
        start = len(ids)
        ids += torch.randint(3, VOCAB, (REPLY + DELTA,), generator=gen).tolist()
        turn = Turn(start=start, end=start + REPLY, text="", action="a")
        if spans != [(0, start)]:
            turn.context = [list(s) for s in spans]
        turns.append(turn)
        starts.append(start)
    mask = [0] * len(ids)
    for t in turns:
        mask[t.start:t.end] = [1] * REPLY
    traj = Trajectory(episode_id=f"e{i}", env_name="toy", task_id=group, group_id=group, token_ids=ids,
                      loss_mask=mask, logprobs=[0.0] * len(ids), prompt_len=PROMPT, turns=turns)
    traj.rewards = [0.0] * (TURNS - 1) + [float((i * 5) % 3)]  # varied returns within each group
    return traj


def _episodes() -> list[Trajectory]:
    """Two groups of three (a group shares its task's prompt): exact window, chunked window, pinned plan."""
    exact, chunked = WindowContext(turns=2), WindowContext(turns=2, chunked=True)
    out = []
    for group in range(2):
        head = torch.randint(3, VOCAB, (PROMPT,), generator=torch.Generator().manual_seed(group)).tolist()
        out += [_episode(3 * group, group, exact, head=head), _episode(3 * group + 1, group, chunked, head=head),
                _episode(3 * group + 2, group, WindowContext(turns=1), pin=0, head=head)]
    return out


@torch.no_grad()
def _each_turn_alone(policy, trajs) -> tuple[dict, dict]:
    """Log-prob and entropy of every reply token, its turn's context and reply run as one sequence."""
    policy.eval()
    logp, ent = {}, {}
    for b, t in enumerate(trajs):
        for turn in t.turns:
            spans = turn.context or [[0, turn.start]]
            seq = [x for a, e in spans for x in t.token_ids[a:e]] + t.token_ids[turn.start:turn.end]
            n = len(seq)
            mask = torch.zeros(1, n)
            mask[0, n - REPLY:] = 1
            out = policy(torch.tensor([seq]), torch.ones(1, n, dtype=torch.long), mask)
            for j in range(REPLY):
                logp[(b, turn.start + j)] = float(out["logprobs"][0, n - REPLY + j])
                ent[(b, turn.start + j)] = float(out["entropy"][0, n - REPLY + j])
    return logp, ent


def _updater(policy, **options):
    from agentgym_trainer_rl.algorithms import ALGORITHMS, EstimatorOptions
    from agentgym_trainer_rl.config import UpdateConfig
    from agentgym_trainer_rl.update import Updater, UpdateSettings

    cfg = UpdateConfig(**options)
    opts = UpdateSettings(**{f.name: getattr(cfg, f.name) for f in dataclasses.fields(UpdateConfig)},
                          bf16=False, device="cpu", min_shared_prefix=4)
    optimizer = torch.optim.SGD([p for p in policy.parameters() if p.requires_grad], lr=0.0)
    return Updater(policy, optimizer, ALGORITHMS["grpo"], opts, EstimatorOptions())


def test_the_contexts_make_segments_as_the_policy_moves():
    from agentgym_core.rollout.segments import training_segments

    exact, chunked, pinned = _episodes()[:3]
    assert [s.turns for s in training_segments(exact)] == [(0, 1, 2), (3,), (4,), (5,)]
    assert [s.turns for s in training_segments(chunked)] == [(0, 1, 2, 3), (4, 5)]
    seg = training_segments(pinned)[-1]  # the plan (turn 0) stays in view after the window moved past it
    assert seg.turns == (5,) and seg.spans[0] == (0, PROMPT + REPLY + DELTA)


@pytest.mark.parametrize("share_prefix", [True, False])
@pytest.mark.parametrize("grad_accum", [1, 2])
def test_the_update_scores_each_reply_under_its_own_context(share_prefix, grad_accum):
    from agentgym_trainer_rl.batch import build_batch

    policy = _model()
    trajs = _episodes()
    alone, alone_ent = _each_turn_alone(policy, trajs)
    batch = build_batch(trajs, pad_id=0)
    assert batch.segments is not None
    # old log-probs (a second PPO epoch needs them): each reply under its own context
    scorer = _updater(policy, ppo_epochs=2, share_prefix=share_prefix, grad_accum=grad_accum)
    scorer.score(batch)
    got = {k: float(batch.old_logprobs[k]) for k in alone}
    worst = max(abs(got[k] - alone[k]) for k in alone)
    assert worst < 1e-5, worst

    # The same episodes scored under their whole prefix (what the update did before) differ: the
    # check above could fail.
    for t in trajs:
        for turn in t.turns:
            turn.context = None
    whole = build_batch(trajs, pad_id=0)
    assert whole.segments is None
    scorer.score(whole)
    assert max(abs(float(whole.old_logprobs[k]) - alone[k]) for k in alone) > 1e-3


def test_advantages_and_loss_per_token_as_scoring_each_turn_alone():
    """Single pass with the sampler = (each turn alone) - offset and tis_cap high: each token's loss is
    -A * exp(offset) exactly when the update scores the token under the context it was sampled from."""
    from agentgym_trainer_rl.batch import build_batch

    policy = _model()
    trajs = _episodes()
    alone, alone_ent = _each_turn_alone(policy, trajs)
    offsets = {}
    for b, t in enumerate(trajs):
        for turn in t.turns:
            for j in range(turn.start, turn.end):
                offsets[(b, j)] = 0.3 if j % 2 else -0.2
                t.logprobs[j] = alone[(b, j)] - offsets[(b, j)]
    batch = build_batch(trajs, pad_id=0)
    # every row runs: the entropy metric covers only the rows that run, and a row here has advantage 0
    updater = _updater(policy, tis_cap=100.0, grad_accum=2, skip_zero_advantage=False)
    metrics = updater.step(batch)

    # GRPO advantages (verl: (R - mean) / (std + 1e-6), std over N - 1) on every reply token of the episode
    returns = torch.tensor([sum(t.rewards) for t in trajs]).view(2, 3)
    normed = ((returns - returns.mean(1, keepdim=True)) / (returns.std(1, keepdim=True) + 1e-6)).flatten()
    for (b, j) in alone:
        assert float(batch.advantages[b, j]) == pytest.approx(float(normed[b]), abs=1e-5)

    n = len(alone)
    expected = sum(-float(batch.advantages[k]) * torch.exp(torch.tensor(offsets[k])).item() for k in alone) / n
    assert metrics["pg_loss"] == pytest.approx(expected, abs=1e-5)
    assert metrics["sampler_logp_diff"] == pytest.approx(sum(abs(v) for v in offsets.values()) / n, abs=1e-5)
    assert metrics["sampler_logp_diff_max"] == pytest.approx(0.3, abs=1e-5)
    assert metrics["entropy"] == pytest.approx(sum(alone_ent.values()) / n, abs=1e-5)
    assert metrics["segments_per_episode"] == pytest.approx((4 + 2 + 4) / 3)  # exact, chunked, pinned


@pytest.mark.slow
def test_a_windowed_run_trains_on_what_the_sampler_saw(tmp_path, plugin_manager, register_plugin, force_cpu_bf16):
    """A real run, history window 2 over 8 turns, fp32: the trainer's log-probs of the sampled tokens equal
    the engine's (it scored under the full episode before: 0.0138 mean, 0.77 max at 6 turns with the
    bundled model)."""
    import json
    import sys
    from pathlib import Path

    pytest.importorskip("agentgym_env_babyai")
    from agentgym_core.config import build_component, load_config

    sys.path.insert(0, str(Path(__file__).parent))
    from agentgym_hf.testing import tiny_model_dir
    from rl_helpers import tiny_config

    force_cpu_bf16(False)
    for mod in ("agentgym_env_babyai.plugin", "agentgym_engine_hf.plugin", "agentgym_trainer_rl.plugin",
                "agentgym_scheduler_scaling.plugin"):
        register_plugin(__import__(mod, fromlist=["x"]), mod)
    overrides = tiny_config(tiny_model_dir(tmp_path), tmp_path / "runs", **{
        "agent.history_window": "2", "scheduler.rounds": "[8]", "trainer.steps": "1", "trainer.save_every": "0",
        "rollout.max_new_tokens": "6", "model.dtype": "fp32", "trainer.ppo_epochs": "2"})
    cfg = load_config(None, overrides, plugin_manager)
    build_component(plugin_manager, "trainers", cfg.trainer, cfg, plugin_manager).fit()
    row = json.loads((tmp_path / "runs" / "tiny" / "metrics.jsonl").read_text().splitlines()[0])
    steps = [json.loads(x) for x in (tmp_path / "runs" / "tiny" / "trajectories" / "step_000001.jsonl").read_text().splitlines()]
    assert max(len(t["turns"]) for t in steps) == 8
    assert any(turn.get("context") for t in steps for turn in t["turns"])  # the window did move
    assert row["segments_per_episode"] > 1
    assert row["sampler_logp_diff"] <= 1e-4 and row["sampler_logp_diff_max"] <= 1e-3, row


def test_a_token_budget_splits_micro_batches_with_the_same_update():
    """micro_batch_tokens splits a micro-batch whose segment rows exceed it, by episodes; the update
    (loss, metrics, the weights after an SGD step) is the one the unsplit micro-batch gives."""
    from agentgym_trainer_rl.batch import build_batch
    from agentgym_trainer_rl.rows import row_tokens

    trajs = _episodes()
    batch = build_batch(trajs, pad_id=0)
    # the exact window's rows, by hand: 4 segments, each its context plus its replies
    exact = [PROMPT + 3 * (REPLY + DELTA) - DELTA] + [PROMPT + 2 * (REPLY + DELTA) + REPLY] * 3
    assert int(row_tokens(batch)[0]) == sum(exact)
    budget = int(row_tokens(batch).max()) + 10  # at most one episode of these fits
    results = []
    for tokens in (None, budget):
        policy = _model()
        updater = _updater(policy, grad_accum=1, micro_batch_tokens=tokens, ppo_epochs=2)
        updater.optimizer = torch.optim.SGD([p for p in policy.parameters() if p.requires_grad], lr=0.5)
        micros = updater._bounded(batch, updater._chunks(torch.arange(len(batch)), 1))
        assert len(micros) == (1 if tokens is None else len(batch))
        torch.manual_seed(7)  # the same row order
        metrics = updater.step(build_batch(trajs, pad_id=0))
        results.append((metrics, [p.detach().clone() for p in policy.parameters()]))
    (m1, w1), (m2, w2) = results
    for key in ("loss", "pg_loss", "entropy", "grad_norm"):
        assert m2[key] == pytest.approx(m1[key], abs=1e-5), key
    assert max(float((a - b).abs().max()) for a, b in zip(w1, w2)) < 1e-5
    assert max(float((a - b).abs().max()) for a, b in zip(w1, [p.detach() for p in _model().parameters()])) > 1e-3
