"""load_model on a LoRA checkpoint folder loads the base model with the adapters merged."""
import json

import torch

from agentgym_hf.loading import load_model, tiny_random_model


def test_lora_checkpoint_loads_merged(tmp_path, hf_tokenizer):
    from peft import LoraConfig, get_peft_model

    base_dir, ckpt = tmp_path / "base", tmp_path / "ckpt"
    base = tiny_random_model(hf_tokenizer, seed=3)
    base.save_pretrained(base_dir)
    hf_tokenizer.save_pretrained(base_dir)
    peft_model = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
    peft_model.save_pretrained(ckpt)
    cfg = json.loads((ckpt / "adapter_config.json").read_text())
    cfg["base_model_name_or_path"] = str(base_dir)
    (ckpt / "adapter_config.json").write_text(json.dumps(cfg))
    ids = torch.tensor([[1, 2, 3, 4, 5]])
    with torch.no_grad():
        expected = peft_model(ids).logits
    model, tokenizer = load_model(str(ckpt), dtype="fp32")
    assert not hasattr(model, "peft_config")  # merged into a plain transformers model
    with torch.no_grad():
        assert torch.allclose(model(ids).logits, expected, atol=1e-5)
    assert tokenizer.vocab_size == hf_tokenizer.vocab_size
