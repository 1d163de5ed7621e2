"""Engines: the abstract ``Engine`` says what one implements, two attributes say how a trainer works
with it, and the toy engine of docs/engines.md (what ``agentgym new plugin --kind engine`` writes)
passes the engine checks."""
from __future__ import annotations

import dataclasses
import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from string import Template

import pytest

from agentgym_core import Engine, GenerationRequest, SamplingParams, check_component_options, check_engine, hookimpl
from agentgym_core.assembly import RunParts
from agentgym_core.config import load_config
from agentgym_core.rollout.engine_checks import check_declarations
from agentgym_core.scaffold_engine import ENGINE_COMPONENT

REPO = Path(__file__).resolve().parents[2]


def _guide_engine(tmp_path: Path):
    """The toy engine's code block of docs/engines.md, imported as a module."""
    text = (REPO / "docs" / "engines.md").read_text(encoding="utf-8")
    block = text.split("## The toy engine", 1)[1].split("```python\n", 1)[1].split("\n```", 1)[0]
    path = tmp_path / "toy_guide.py"
    path.write_text(block + "\n", encoding="utf-8")
    spec = importlib.util.spec_from_file_location("toy_guide", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return block, module


def test_the_toy_engine_of_the_guide_passes_the_engine_checks(tmp_path):
    block, module = _guide_engine(tmp_path)
    assert block.strip() == Template(ENGINE_COMPONENT).substitute(name="toy", cls="ToyEngine").strip()
    assert re.findall(r"^from (\S+) import", block, flags=re.M) == ["dataclasses", "agentgym_core"]
    engine = module.ToyEngine("toy-model")
    check_engine(engine)
    check_component_options(module.ToyEngine, "engines")
    prompt = engine.tokenizer("Once upon a time")["input_ids"]
    params = SamplingParams(temperature=0.7, top_p=0.9, max_new_tokens=12, seed=5, stop_strings=("e",))
    result = engine.generate([GenerationRequest(prompt, params)])[0]
    assert result.finish_reason == "length" or "e" in engine.tokenizer.decode(result.token_ids)


def test_an_engine_that_lacks_a_method_cannot_be_built_and_says_which():
    class Half(Engine):
        def generate(self, requests):
            return []

    with pytest.raises(TypeError, match="tokenizer.*update_weights|update_weights.*tokenizer"):
        Half()


def test_declarations_are_checked(tmp_path):
    _, module = _guide_engine(tmp_path)

    class NoDevice(module.ToyEngine):
        @dataclasses.dataclass
        class Config:
            spread: float = 2.0

    with pytest.raises(AssertionError, match="Config needs a device field"):
        check_declarations(NoDevice("m"))
    NoDevice.placement = "self"
    check_declarations(NoDevice("m"))
    NoDevice.placement = "gpu"
    with pytest.raises(AssertionError, match="placement must be"):
        check_declarations(NoDevice("m"))


def test_load_engine_passes_the_trainers_device_only_to_an_engine_placed_by_option(tmp_path, plugin_manager,
                                                                                    register_plugin, monkeypatch):
    _, module = _guide_engine(tmp_path)
    seen = {}

    class Placed(module.ToyEngine):
        def __init__(self, model, tokenizer=None, **kwargs):
            seen[type(self).__name__] = kwargs.pop("device", None)  # (the toy itself runs on the CPU only)
            super().__init__(model, tokenizer, **kwargs)

    class SelfPlaced(Placed):
        placement = "self"

        @dataclasses.dataclass
        class Config:
            spread: float = 2.0

    module.Placed, module.SelfPlaced = Placed, SelfPlaced
    monkeypatch.setitem(sys.modules, "toy_guide", module)  # the registry imports "toy_guide:Placed"

    class Plugin:
        @staticmethod
        @hookimpl
        def register_engines(registry):
            registry.add("placed", "toy_guide:Placed")
            registry.add("self_placed", "toy_guide:SelfPlaced")

    register_plugin(Plugin, "toy-engines")
    for name in ("placed", "self_placed"):
        cfg = load_config(None, [f"engine.name={name}"], plugin_manager)
        RunParts(pool=None, env=None, config=cfg, manager=plugin_manager).load_engine("m", device="cuda:3")
    assert seen == {"Placed": "cuda:3", "SelfPlaced": None}


def test_new_engine_plugin_installs_is_listed_and_its_tests_pass(run_cli, tmp_path, pip_install_target):
    res = run_cli("new", "plugin", "toy", "--kind", "engine", "-o", str(tmp_path), site=False)
    assert res.returncode == 0, res.stderr
    pkg, site = tmp_path / "agentgym-engine-toy", tmp_path / "site"
    pip_install_target(pkg, site)
    listed = run_cli("list", "engines", site=False, env={"PYTHONPATH": str(site)})
    assert listed.returncode == 0 and "toy" in listed.stdout
    cfg = tmp_path / "run.yaml"
    cfg.write_text("env: {name: babyai}\nengine: {name: toy, spread: 1.5}\n")
    shown = run_cli("config", "show", "-c", str(cfg), site=False, env={"PYTHONPATH": str(site)})
    assert shown.returncode == 0 and "spread: 1.5" in shown.stdout, shown.stderr
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(pkg / "tests")],
                         capture_output=True, text=True, env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0 and "4 passed" in out.stdout, out.stdout + out.stderr
