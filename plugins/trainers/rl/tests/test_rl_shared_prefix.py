"""A group's common prompt run once: the same log-probs, losses and updated weights as running
every episode whole, on a tiny random Llama (LoRA and full fine-tuning with a value head)."""
from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from agentgym_core.rollout.trajectory import Trajectory, Turn  # noqa: E402
from agentgym_trainer_rl.algorithms import ALGORITHMS, EstimatorOptions  # noqa: E402
from agentgym_trainer_rl.batch import build_batch  # noqa: E402
from agentgym_trainer_rl.policy import PolicyModule, apply_lora, enable_checkpointing  # noqa: E402
from agentgym_trainer_rl.update import Updater, UpdateSettings  # noqa: E402

VOCAB = 64


def tiny_lm(seed: int = 0):
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    return transformers.LlamaForCausalLM(cfg)


def episodes(groups: int = 2, size: int = 3, prompt: int = 24, seed: int = 1, system: int = 0,
             loner: bool = False) -> list[Trajectory]:
    """Each group: one prompt (after *system* tokens every episode shares); each member: 1-2
    turns of different lengths; one failed member; with *loner*, a last group of one."""
    g = torch.Generator().manual_seed(seed)
    shared = torch.randint(1, VOCAB, (system,), generator=g).tolist()
    out = []
    for group in range(groups + int(loner)):
        head = shared + torch.randint(1, VOCAB, (prompt - system,), generator=g).tolist()
        for k in range(size if group < groups else 1):
            ids, mask, turns = list(head), [0] * prompt, []
            for _ in range(1 + (k % 2)):
                reply = torch.randint(1, VOCAB, (3 + k,), generator=g).tolist()
                turns.append(Turn(len(ids), len(ids) + len(reply), "", ""))
                ids += reply
                mask += [1] * len(reply)
                obs = torch.randint(1, VOCAB, (4,), generator=g).tolist()
                ids += obs
                mask += [0] * len(obs)
            out.append(Trajectory(
                episode_id=f"{group}-{k}", env_name="toy", task_id=group, group_id=group, token_ids=ids,
                loss_mask=mask, logprobs=[0.0] * len(ids), prompt_len=prompt, turns=turns,
                rewards=[0.0] * (len(turns) - 1) + [float(k == group)], failed=(group == 1 and k == 2)))
    return out


def build(lora: bool, algorithm: str, share: bool, **opts):
    lm = tiny_lm()
    if lora:
        lm = apply_lora(lm, 4, 8, 0.0, ["q_proj", "v_proj", "down_proj"], last_layers=2)
        for name, p in lm.named_parameters():
            if "lora_B" in name:  # non-zero adapters, so the reference differs from the policy
                torch.nn.init.normal_(p, std=0.2, generator=torch.Generator().manual_seed(3))
    algo = ALGORITHMS[algorithm]
    policy = PolicyModule(lm, value_head=algo.needs_critic)
    if policy.value_head is not None:
        torch.nn.init.normal_(policy.value_head.weight, std=0.1, generator=torch.Generator().manual_seed(4))
    reference = None if lora or not opts.get("kl_coef") else PolicyModule(copy.deepcopy(tiny_lm(seed=5)))
    params = [p for p in policy.parameters() if p.requires_grad]
    updater = Updater(policy, torch.optim.SGD(params, lr=0.5), algo,
                      UpdateSettings(share_prefix=share, min_shared_prefix=8, **opts), EstimatorOptions(), reference=reference)
    return policy, updater


@pytest.mark.parametrize("lora,algorithm,system", [(True, "grpo", 0), (False, "ppo", 0), (True, "grpo", 12),
                                                   (False, "ppo", 12)])
def test_shared_prefix_update_equals_the_plain_update(lora, algorithm, system):
    """*system* > 0: every episode starts with the same 12 tokens (a system prompt), shared by
    the whole micro-batch on top of each group's prompt, plus a group of one that shares only those."""
    torch.set_num_threads(1)
    opts = dict(kl_coef=0.1, ppo_epochs=2, mini_batches=1, grad_accum=1 if system else 2, entropy_coef=0.01)
    results = []
    for share in (False, True):
        policy, updater = build(lora, algorithm, share, **opts)
        batch = build_batch(episodes(system=system, loner=bool(system)))
        torch.manual_seed(7)
        metrics = updater.step(batch)
        weights = {n: p.detach().clone() for n, p in policy.named_parameters() if p.requires_grad}
        results.append((batch, metrics, weights))
    (plain, m0, w0), (shared, m1, w1) = results
    assert m0["shared_prefix_frac"] == 0.0
    # 2 groups; group 0 shares its 23-token prefix over 3 rows, group 1 over its 2 others (its
    # failed row, without a trained token, is not run at all: skip_zero_advantage): (2 + 1) * 23
    # tokens per epoch are not run again. With the system prefix (the whole batch in one
    # micro-batch), its 12 tokens run once for all rows: each group's prefix pass starts after
    # them (2 * 12 fewer) and the group of one runs only its own tokens.
    saved = (2 + 1) * 23 + (2 * 12 if system else 0)
    assert m1["shared_prefix_frac"] == pytest.approx(saved / float(plain.attention_mask.sum()))
    for name in ("old_logprobs", "ref_logprobs", "advantages") + (("values",) if algorithm == "ppo" else ()):
        a, b = getattr(plain, name), getattr(shared, name)
        assert torch.allclose(a, b, atol=2e-5), f"{name}: max diff {(a - b).abs().max():.2e}"
    for key in ("loss", "pg_loss", "kl", "entropy", "grad_norm"):
        assert m1[key] == pytest.approx(m0[key], rel=1e-4, abs=1e-6), key
    assert w0.keys() == w1.keys() and len(w0) > 0
    for name in w0:
        assert torch.allclose(w0[name], w1[name], atol=1e-5), f"{name}: max diff {(w0[name] - w1[name]).abs().max():.2e}"


def test_prefix_plans_stop_before_the_first_generated_token():
    batch = build_batch(episodes(groups=3, size=2, prompt=20))
    # Make group 2's rows differ at position 9, and put group 1 alone (a group of one).
    batch.input_ids[5, 9] = (batch.input_ids[4, 9] + 1) % VOCAB
    batch.group_ids[3] = 7
    plan = batch.prefix_plan(min_prefix=4)
    assert plan.base == 0  # the groups' prompts are unrelated
    segs = {tuple(rows.tolist()): p for rows, p in plan.segments}
    # group 0: the 20-token prompt is shared; position 19 predicts the first reply token, so p = 19.
    assert segs[(0, 1)] == 19
    assert segs[(4, 5)] == 9
    # rows 2 and 3 are in different groups now: neither shares anything.
    assert segs[(2, 3)] == 0
    assert sorted(r for rows in segs for r in rows) == list(range(6))
    # A longer minimum turns group 2 (9 common tokens) into unshared rows too.
    segs = {tuple(sorted(rows.tolist())): p for rows, p in batch.prefix_plan(min_prefix=10).segments}
    assert segs == {(0, 1): 19, (2, 3, 4, 5): 0}
    # Every episode starting with the same 12 tokens: the plan runs them once for all rows.
    plan = build_batch(episodes(groups=2, size=2, prompt=20, system=12, loner=True)).prefix_plan(min_prefix=4)
    assert plan.base == 12
    assert {tuple(rows.tolist()): p for rows, p in plan.segments} == {(0, 1): 19, (2, 3): 19, (4,): 12}
    assert plan.saved_tokens == (2 * 19 + 2 * 19 + 12) - (12 + 7 + 7)


def test_gradient_checkpointing_falls_back_to_whole_rows():
    """Checkpointing drops the KV cache in training: the shared path must not be taken silently."""
    torch.set_num_threads(1)
    batch = build_batch(episodes())
    out = []
    for plan in (None, batch.prefix_plan(min_prefix=8)):
        lm = tiny_lm()
        enable_checkpointing(lm)
        policy = PolicyModule(lm).train()
        res = policy(batch.input_ids, batch.attention_mask, batch.loss_mask, plan=plan)
        res["logprobs"].sum().backward()
        out.append((res["logprobs"].detach(), lm.model.embed_tokens.weight.grad.clone()))
    assert torch.allclose(out[0][0], out[1][0], atol=1e-6)
    assert torch.allclose(out[0][1], out[1][1], atol=1e-6)


def test_rows_are_cut_after_their_last_generated_token():
    """Episodes end on an observation; the update does not run it (nothing trained reads it)."""
    torch.set_num_threads(1)
    batch = build_batch(episodes())
    rows = torch.arange(len(batch))
    mb = batch.select(rows)
    last = max(int(torch.nonzero(batch.loss_mask[i]).max()) + 1 for i in range(len(batch)) if batch.loss_mask[i].any())
    assert mb.input_ids.shape[1] == last < batch.input_ids.shape[1]
    policy = PolicyModule(tiny_lm(), value_head=True)
    torch.nn.init.normal_(policy.value_head.weight, std=0.1)
    whole = policy(batch.input_ids, batch.attention_mask, batch.loss_mask)
    cut = policy(mb.input_ids, mb.attention_mask, mb.loss_mask)
    for key in ("logprobs", "entropy", "values"):
        assert torch.allclose(whole[key][:, :last], cut[key], atol=1e-6), key
        assert not whole[key][:, last:].any(), key  # nothing was trained past the cut


@pytest.mark.parametrize("lora,algorithm", [(True, "grpo"), (False, "ppo")])
def test_lm_head_in_chunks_gives_the_one_pass_update(monkeypatch, lora, algorithm):
    """The LM head and log-softmax 3 positions at a time (checkpointed, so recomputed in backward), under the
    shared-prefix plan, with KL, entropy and (PPO) a value head: the same scores, metrics and weights."""
    from agentgym_hf import logprobs

    torch.set_num_threads(1)
    opts = dict(kl_coef=0.1, ppo_epochs=2, grad_accum=2, entropy_coef=0.01)
    results = []
    for chunk in (logprobs.CHUNK, 3):
        monkeypatch.setattr(logprobs, "CHUNK", chunk)
        policy, updater = build(lora, algorithm, True, **opts)
        batch = build_batch(episodes())
        torch.manual_seed(7)
        metrics = updater.step(batch)
        results.append((batch, metrics, {n: p.detach().clone() for n, p in policy.named_parameters() if p.requires_grad}))
    (one, m0, w0), (chunked, m1, w1) = results
    assert m1["shared_prefix_frac"] == m0["shared_prefix_frac"] > 0
    for name in ("old_logprobs", "ref_logprobs", "advantages"):
        assert torch.allclose(getattr(one, name), getattr(chunked, name), atol=1e-5), name
    for key in ("loss", "pg_loss", "kl", "entropy", "grad_norm"):
        assert m1[key] == pytest.approx(m0[key], rel=1e-5, abs=1e-6), key
    for name in w0:
        assert torch.allclose(w0[name], w1[name], atol=1e-5), f"{name}: max diff {(w0[name] - w1[name]).abs().max():.2e}"
