"""bf16 decoding from fp32 master weights: where the CPU (or GPU) computes bf16 natively and ``model.dtype``
is ``auto``, the hf engine samples from a bf16 copy of the policy, refreshed after every update, while the
trainer keeps fp32 weights and optimizer state and updates under bf16 autocast. With ``dtype: fp32``, or on
a CPU without native bf16, the engine runs the live fp32 policy as before."""
from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("agentgym_engine_hf")

sys.path.insert(0, str(Path(__file__).parent))
from agentgym_hf.testing import tiny_model_dir  # noqa: E402
from rl_helpers import train_two_steps  # noqa: E402


def _tiny_lm(tied: bool = True):
    import transformers

    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                                   num_attention_heads=2, num_key_value_heads=2, tie_word_embeddings=tied)
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(cfg)


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
def test_the_engine_copy_is_the_merged_policy_in_bf16_and_the_policy_is_untouched(lora, dtype):
    """In bf16 (the sampler's copy) and in fp32 (an asynchronous run's worker): a copy of its own, whose merge
    and later weight loads leave the policy's tensors alone."""
    from agentgym_hf.training import apply_lora, engine_copy, plain_state_dict

    lm = _tiny_lm()
    if lora:
        lm = apply_lora(lm, 4, 8, 0.0, ["q_proj", "v_proj"], last_layers=2)
        for name, p in lm.named_parameters():
            if "lora_B" in name:  # B starts at zero: make the adapters change the weights
                torch.nn.init.normal_(p)
    before = {k: v.clone() for k, v in lm.state_dict().items()}
    dtype = getattr(torch, dtype)
    copy_ = engine_copy(lm, dtype)
    assert not any("lora_" in k for k in copy_.state_dict())  # merged: a plain model
    assert {p.dtype for p in copy_.parameters()} == {dtype}
    mine = {p.data_ptr() for p in lm.parameters()}
    assert not any(p.data_ptr() in mine for p in copy_.parameters())  # no storage shared with the policy
    assert not any(p.requires_grad for p in copy_.parameters()) and not copy_.training
    assert copy_.get_output_embeddings().weight is copy_.get_input_embeddings().weight  # still tied
    plain = plain_state_dict(lm)
    for key, value in copy_.state_dict().items():  # each weight: the fp32 merge, cast once
        assert value.equal(plain[key].to(dtype)), key
    after = lm.state_dict()
    assert all(after[k].equal(v) and after[k].dtype == torch.float32 for k, v in before.items())
    ids = torch.tensor([[1, 5, 9, 3]])
    with torch.no_grad():
        want = (copy.deepcopy(lm).merge_and_unload() if lora else lm)(input_ids=ids).logits
        got = copy_(input_ids=ids).logits.float()
    torch.testing.assert_close(got, want, atol=0.05, rtol=0.05)  # bf16 rounding only
    with torch.no_grad():  # a weight load into the copy (a new version) does not reach the policy
        copy_.load_state_dict({k: v + 1 for k, v in copy_.state_dict().items()})
    assert all(lm.state_dict()[k].equal(v) for k, v in before.items())


def test_adapted_only_gives_the_merged_adapted_layers_alone():
    from agentgym_hf.training import apply_lora, plain_state_dict

    lm = apply_lora(_tiny_lm(), 4, 8, 0.0, ["q_proj", "v_proj"], last_layers=2)
    part = plain_state_dict(lm, adapted_only=True)
    assert set(part) == {f"model.layers.{i}.self_attn.{m}.weight" for i in (1, 2) for m in ("q_proj", "v_proj")}
    full = plain_state_dict(lm)
    assert all(part[k].equal(full[k]) for k in part)


def _run(tmp_path, plugin_manager, register_plugin, *, finetune: str, dtype: str, name: str):
    pytest.importorskip("agentgym_env_babyai")
    trainer = train_two_steps(plugin_manager, register_plugin, tiny_model_dir(tmp_path), tmp_path / "runs", name,
                              finetune, **{"model.dtype": dtype})
    rows = [json.loads(x) for x in (tmp_path / "runs" / name / "metrics.jsonl").read_text().splitlines()]
    return trainer, rows


@pytest.mark.slow
@pytest.mark.parametrize("finetune", ["lora", "full"])
def test_with_native_bf16_the_engine_samples_from_a_bf16_copy_of_every_update(tmp_path, plugin_manager,
                                                                              register_plugin, force_cpu_bf16, finetune):
    from agentgym_hf.training import plain_state_dict

    force_cpu_bf16(True)
    trainer, rows = _run(tmp_path, plugin_manager, register_plugin, finetune=finetune, dtype="auto", name=finetune)
    engine, policy = trainer.engine, trainer.module.lm
    assert trainer.bf16 and trainer.bf16_engine_copy
    assert engine.shares_weights is False and engine.model is not policy
    assert {p.dtype for p in engine.model.parameters()} == {torch.bfloat16}
    assert {p.dtype for p in policy.parameters()} == {torch.float32}  # fp32 master weights
    assert {s["exp_avg"].dtype for s in trainer.optimizer.state.values()} == {torch.float32}  # and AdamW state
    merged = plain_state_dict(policy)
    served = engine.model.state_dict()
    assert set(served) == set(merged)
    for key, value in merged.items():  # the engine samples from the trained policy, rounded to bf16 once
        assert served[key].equal(value.to(torch.bfloat16)), key
    assert len(rows) == 2 and all(r["weight_sync_time_s"] > 0 for r in rows)
    assert all(r["sampler_logp_diff"] > 0 for r in rows)  # the gap is measured every step


@pytest.mark.slow
@pytest.mark.parametrize("native,dtype", [(True, "fp32"), (False, "auto")], ids=["pinned-fp32", "cpu-without-bf16"])
def test_without_bf16_the_engine_runs_the_live_fp32_policy(tmp_path, plugin_manager, register_plugin, force_cpu_bf16,
                                                           native, dtype):
    force_cpu_bf16(native)
    trainer, rows = _run(tmp_path, plugin_manager, register_plugin, finetune="lora", dtype=dtype, name="live")
    assert not trainer.bf16 and not trainer.bf16_engine_copy
    assert trainer.engine.shares_weights is True and trainer.engine.model is trainer.module.lm
    assert all(r["sampler_logp_diff_max"] < 1e-4 for r in rows)  # same weights, same precision
