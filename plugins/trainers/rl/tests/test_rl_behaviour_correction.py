"""Sampler/trainer mismatch: the metric of |log pi_trainer - log pi_sampler| over trained tokens, and
truncated importance sampling (``trainer.tis_cap``): the loss as the TIS paper's formula says."""
from __future__ import annotations

import dataclasses
import json
import math
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("agentgym_engine_hf")

sys.path.insert(0, str(Path(__file__).parent))
from agentgym_hf.testing import tiny_model_dir  # noqa: E402
from rl_helpers import tiny_config  # noqa: E402

from agentgym_core import hookimpl  # noqa: E402


def _updater(tis_cap):
    from agentgym_hf.loading import load_tokenizer, tiny_random_model
    from agentgym_trainer_rl.algorithms import ALGORITHMS, EstimatorOptions
    from agentgym_trainer_rl.config import UpdateConfig
    from agentgym_trainer_rl.policy import PolicyModule
    from agentgym_trainer_rl.update import Updater, UpdateSettings

    tok = load_tokenizer("smollm2-135m-instruct")
    policy = PolicyModule(tiny_random_model(tok, seed=2))
    opts = UpdateSettings(**{f.name: getattr(UpdateConfig(tis_cap=tis_cap), f.name)
                            for f in dataclasses.fields(UpdateConfig)}, bf16=False, device="cpu")
    optimizer = torch.optim.AdamW(policy.parameters(), lr=0.0)  # measure the loss, keep the weights
    return policy, Updater(policy, optimizer, ALGORITHMS["grpo"], opts, EstimatorOptions())


def _batch(policy):
    from agentgym_core.rollout.trajectory import Trajectory, Turn
    from agentgym_trainer_rl.batch import build_batch

    gen = torch.Generator().manual_seed(4)
    trajs = []
    for i in range(2):  # one group: a success and a failure, two turns each, an observation between
        ids = torch.randint(10, 400, (30,), generator=gen).tolist()
        mask = [0] * 8 + [1] * 6 + [0] * 6 + [1] * 10
        t = Trajectory(episode_id=f"e{i}", env_name="toy", task_id=0, group_id=0, token_ids=ids, loss_mask=mask,
                       logprobs=[0.0] * 30, prompt_len=8,
                       turns=[Turn(start=8, end=14, text="", action="a"), Turn(start=20, end=30, text="", action="b")])
        t.rewards = [0.0, 1.0 - i]
        trajs.append(t)
    batch = build_batch(trajs, pad_id=0)
    with torch.no_grad():
        old = policy(batch.input_ids, batch.attention_mask, batch.loss_mask, with_entropy=False)["logprobs"]
    # The sampler computed differently: log pi_sampler = log pi_old - offset, offsets 1.5 and -0.5 alternating.
    offset = torch.where(torch.arange(30) % 2 == 0, 1.5, -0.5).expand(2, 30) * batch.loss_mask
    batch.sampler_logprobs = (old - offset) * batch.loss_mask
    return batch, offset


@pytest.mark.parametrize("cap", [None, 2.0])
def test_truncated_importance_weights_as_the_formula_says(cap):
    """Single pass: PPO's ratio is 1, so each token's loss is -A_t * min(exp(old_t - sampler_t), cap)."""
    policy, updater = _updater(cap)
    batch, offset = _batch(policy)
    metrics = updater.step(batch)
    mask, adv = batch.loss_mask, batch.advantages
    weight = torch.exp(offset).clamp(max=cap) if cap is not None else torch.ones_like(offset)
    expected = float((-adv * weight * mask).sum() / mask.sum())
    assert metrics["pg_loss"] == pytest.approx(expected, rel=1e-5, abs=1e-6)
    assert adv[0][mask[0] > 0].abs().min() > 0.1  # a loss that could tell the weights apart
    assert metrics["sampler_logp_diff"] == pytest.approx(float(offset.abs().sum() / mask.sum()), rel=1e-5)
    assert metrics["sampler_logp_diff_max"] == pytest.approx(1.5, rel=1e-5)
    if cap is not None:  # exp(1.5) = 4.48 is cut to 2; exp(-0.5) = 0.61 is kept
        assert math.exp(1.5) > cap > math.exp(-0.5)
        assert metrics["tis_truncated"] == pytest.approx(float((offset > 1).sum() / mask.sum()))


class PrecisionPlugin:
    @staticmethod
    @hookimpl
    def register_engines(registry):
        registry.add("hf_bf16_copy", "rl_helpers:OwnCopyBF16Engine")


@pytest.mark.slow
@pytest.mark.parametrize("native_bf16", [False, True], ids=["cpu-fp32", "cpu-native-bf16"])
def test_an_engine_in_another_precision_shows_in_the_metric(tmp_path, plugin_manager, register_plugin, force_cpu_bf16,
                                                            native_bf16):
    """Without native bf16 the trainer computes in fp32: an engine sampling in bf16 gives other log-probs
    for the same tokens, the live fp32 engine the same ones (to float rounding). With native bf16
    (``model.dtype: auto``) the trainer autocasts to bf16 while the hf engine samples from its bf16 copy
    of the weights (other kernels, other rounding): the metric shows that gap too. Both run on any
    machine (AGENTGYM_CPU_BF16)."""
    pytest.importorskip("agentgym_env_babyai")
    from agentgym_core.config import build_component, load_config

    force_cpu_bf16(native_bf16)
    for mod in ("agentgym_env_babyai.plugin", "agentgym_engine_hf.plugin", "agentgym_trainer_rl.plugin",
                "agentgym_scheduler_scaling.plugin"):
        register_plugin(__import__(mod, fromlist=["x"]), mod)
    register_plugin(PrecisionPlugin, "precision-engine")
    torch.set_num_threads(1)
    model = tiny_model_dir(tmp_path)
    diffs = {}
    for engine in ("hf", "hf_bf16_copy"):
        overrides = tiny_config(model, tmp_path / "runs", name=engine, **{
            "engine.name": engine, "trainer.steps": "1", "trainer.save_every": "0", "trainer.tis_cap": "2.0",
            "scheduler.rounds": "[1]", "rollout.max_new_tokens": "6",
            # the tiny model earns no reward: every row would skip the single pass that scores it
            "trainer.skip_zero_advantage": "false"})
        cfg = load_config(None, overrides, plugin_manager)
        build_component(plugin_manager, "trainers", cfg.trainer, cfg, plugin_manager).fit()
        row = json.loads((tmp_path / "runs" / engine / "metrics.jsonl").read_text().splitlines()[0])
        diffs[engine] = (row["sampler_logp_diff"], row["sampler_logp_diff_max"], row["tis_truncated"])
    # bf16 rounding moves every log-prob (measured 3.7e-4 mean on this near-uniform tiny model)
    assert diffs["hf_bf16_copy"][0] > 1e-4, diffs
    assert diffs["hf_bf16_copy"][1] >= diffs["hf_bf16_copy"][0]
    if native_bf16:  # the engine's bf16 copy against the bf16-autocast trainer
        assert diffs["hf"][0] > 1e-4, diffs
    else:  # same weights, same precision: float rounding (measured 5e-7 mean)
        assert diffs["hf"][1] < 1e-5, diffs
        assert diffs["hf_bf16_copy"][0] > 100 * diffs["hf"][0], diffs
