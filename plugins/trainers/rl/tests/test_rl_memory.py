"""The memory check before a run: figures computed by hand, LoRA counts against peft's own, the error's advice."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from agentgym_trainer_rl.config import RLConfig  # noqa: E402
from agentgym_trainer_rl.memory import GIB, WontFit, check_fits, estimate, lora_parameters  # noqa: E402


def test_a_7b_full_fine_tune_needs_112_gb_and_fsdp_splits_it():
    """fp32 weights (4 B) + gradients (4 B) + AdamW's two moments (8 B) = 16 bytes a parameter."""
    full = RLConfig(finetune="full")
    one = estimate(7_000_000_000, 7_000_000_000, full)
    assert one.total == 16 * 7e9 == 112e9
    four = estimate(7_000_000_000, 7_000_000_000, RLConfig(finetune="full", strategy="fsdp"), world=4, engine_copy=True)
    assert four.weights == four.gradients == 7e9 and four.optimizer == 14e9
    assert four.engine == 14e9  # the rollout engine's own bf16 copy is not sharded
    eight_bit = estimate(7_000_000_000, 7_000_000_000, RLConfig(finetune="full", optimizer="adamw_8bit"))
    assert eight_bit.optimizer == 14e9
    offloaded = estimate(7_000_000_000, 7_000_000_000, RLConfig(finetune="full", strategy="fsdp", fsdp_offload=True),
                         world=4)
    assert offloaded.total == 0
    with_kl = estimate(1_000, 1_000, RLConfig(finetune="full", kl_coef=0.1))
    assert with_kl.reference == 4_000


def test_lora_parameter_count_matches_peft():
    from agentgym_hf.loading import load_tokenizer, tiny_random_model
    from agentgym_trainer_rl.policy import apply_lora

    smol_tokenizer = load_tokenizer("smollm2-135m-instruct")
    model = tiny_random_model(smol_tokenizer, num_hidden_layers=3)
    for targets, layers in ((["q_proj", "v_proj"], 0), (["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                                         "down_proj"], 2)):
        settings = RLConfig(lora_r=4, lora_targets=targets, lora_layers=layers)
        peft_model = apply_lora(tiny_random_model(smol_tokenizer, num_hidden_layers=3), 4, 8, 0.0, targets, layers)
        trained = sum(p.numel() for p in peft_model.parameters() if p.requires_grad)
        assert lora_parameters(model.config, settings) == trained


def test_the_error_names_the_need_the_free_memory_and_the_ways_to_fit():
    settings = RLConfig(finetune="full")
    need = estimate(7_000_000_000, 7_000_000_000, settings)
    check_fits(need, 200 * GIB, "cuda:0", params=7_000_000_000, world=1, settings=settings)  # fits: no error
    with pytest.raises(WontFit) as err:
        check_fits(need, 80 * GIB, "cuda:0", params=7_000_000_000, world=1, settings=settings)
    text = str(err.value)
    assert "needs about 104.3 GiB per process" in text and "cuda:0 has 80.0 GiB free" in text
    for way in ("trainer.finetune=lora", "trainer.strategy=fsdp", "trainer.optimizer=adamw_8bit",
                "trainer.gradient_checkpointing=true"):
        assert way in text, way


@pytest.mark.parametrize("override,message", [
    ("trainer.strategy=zero3", "trainer.strategy must be one of ddp, fsdp"),
    ("trainer.optimizer=adam", "trainer.optimizer must be one of adamw, adamw_8bit"),
    ("trainer.fsdp_offload=true", "trainer.fsdp_offload needs trainer.strategy=fsdp"),
])
def test_strategy_and_optimizer_are_checked_when_the_config_loads(override, message):
    from agentgym_core.config import load_config
    from agentgym_core.errors import ConfigError

    with pytest.raises(ConfigError, match=message):
        load_config(None, ["trainer.name=rl", override])


def test_8_bit_adamw_off_cuda_is_one_clear_error():
    from agentgym_core.errors import AgentGymError
    from agentgym_trainer_rl.optim import make_optimizer

    with pytest.raises(AgentGymError, match="adamw_8bit runs on CUDA only.*use trainer.optimizer=adamw"):
        make_optimizer([torch.nn.Parameter(torch.zeros(2))], RLConfig(optimizer="adamw_8bit"), "cpu")
