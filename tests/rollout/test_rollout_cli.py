"""``agentgym rollout`` end to end on a real env plugin (babyai) with a tiny model folder."""
from __future__ import annotations

import importlib.util
import json

import pytest
from agentgym_hf.loading import tiny_random_model

from agentgym_core.cli.main import main


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("agentgym_env_babyai") is None, reason="needs the babyai env plugin")
def test_rollout_command_prints_summary_and_dumps(smol_tokenizer, tmp_path, capsys):
    model = tmp_path / "tiny"
    tiny_random_model(smol_tokenizer, seed=2).save_pretrained(model)
    smol_tokenizer.save_pretrained(model)
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(f"env: {{name: babyai}}\nmodel: {{path: {model}, dtype: fp32}}\nengine: {{name: hf, threads: 1}}\n")
    dump = tmp_path / "out.jsonl"
    code = main(["rollout", "-c", str(cfg), "--episodes", "3", "--local", "--max-turns", "2",
                 "--dump", str(dump), "rollout.max_new_tokens=8"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "success rate" in out and "mean turns 2.00" in out and "tokens/s" in out
    lines = dump.read_text().splitlines()
    assert len(lines) == 3 and json.loads(lines[0])["env_name"] == "babyai"


def test_rollout_command_needs_env_section(tmp_path, capsys):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("model: {path: smollm2-135m-instruct}\n")
    assert main(["rollout", "-c", str(cfg), "--local"]) == 1
    assert "no env section" in capsys.readouterr().err
