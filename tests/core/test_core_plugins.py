"""Plugin manager: internal defaults, hook validation, lifecycle hooks, env-var switches."""
import json
import subprocess
import sys
import types

import pytest

from agentgym_core import hookimpl
from agentgym_core.errors import PluginLoadError
from agentgym_core.plugins import get_plugin_manager


def test_internal_defaults(plugin_manager):
    core = plugin_manager.plugins["core"]
    assert core.internal and core.distribution == "agentgym-core"
    assert plugin_manager.registry("schedulers").names() == ["fixed"]
    assert plugin_manager.registry("rewards").names() == ["env", "success"]
    assert plugin_manager.registry("backends").names() == ["cpu"]


def test_hook_register_schedulers(plugin_manager, register_plugin):
    mod = types.ModuleType("sched_plugin")
    mod.register_schedulers = hookimpl(lambda registry: registry.add("doubling", "x.y:Doubling"))
    register_plugin(mod, name="sched")
    assert plugin_manager.registry("schedulers").names() == ["doubling", "fixed"]
    sched = plugin_manager.registry("schedulers").build("fixed", turns=4)
    assert sched.max_turns(0) == sched.max_turns(1000) == 4


def test_hook_register_rewards(plugin_manager, register_plugin):
    mod = types.ModuleType("reward_plugin")
    mod.register_rewards = hookimpl(lambda registry: registry.add("length", "x.y:Length"))
    register_plugin(mod, name="rew")
    assert "length" in plugin_manager.registry("rewards")
    from agentgym_core.rollout import Trajectory, Turn

    traj = Trajectory("e", "env", 0, 0, [1, 2, 3], [0, 1, 1], [0, 0, 0], 1,
                      turns=[Turn(1, 2, "a", "a"), Turn(2, 3, "b", "b")], success=True)
    assert plugin_manager.registry("rewards").build("success")(traj) == [0.0, 1.0]
    traj.success = False
    assert plugin_manager.registry("rewards").build("success")(traj) == [0.0, 0.0]


def test_hook_register_backends(plugin_manager, register_plugin):
    mod = types.ModuleType("backend_plugin")
    mod.register_backends = hookimpl(lambda registry: registry.add("tpu", "x.y:TPU"))
    register_plugin(mod, name="tpu")
    cpu = plugin_manager.registry("backends").build("cpu")
    assert cpu.is_available() == (True, "") and cpu.device(3) == "cpu" and cpu.dist_backend == "gloo"
    assert plugin_manager.registry("backends").get("tpu").plugin == "tpu"


def test_hook_register_trainers(plugin_manager, register_plugin):
    mod = types.ModuleType("trainer_plugin")
    mod.register_trainers = hookimpl(lambda registry: registry.add("mine", "agentgym_core.components:Trainer"))
    register_plugin(mod, name="tr")
    trainer = plugin_manager.registry("trainers").build("mine", {"a": 1}, plugin_manager)
    assert trainer.config == {"a": 1} and trainer.manager is plugin_manager


def test_hook_register_engines(plugin_manager, register_plugin):
    mod = types.ModuleType("engine_plugin")
    mod.register_engines = hookimpl(lambda registry: registry.add("echo", "agentgym_core.engine:Engine"))
    register_plugin(mod, name="eng")
    assert plugin_manager.registry("engines").load("echo").__name__ == "Engine"


def test_hook_register_commands(plugin_manager, register_plugin):
    """A plugin's command is listed after core's, imported only when asked for, and runs."""
    import click
    from click.testing import CliRunner

    mod = types.ModuleType("cmd_plugin")
    mod.register_commands = hookimpl(
        lambda registry: registry.add("hello", "cmd_plugin_target:hello", description="Say hello."))
    target = types.ModuleType("cmd_plugin_target")
    target.hello = click.Command("hello", callback=lambda: click.echo("hello from a plugin"))
    register_plugin(mod, name="cmds")
    registry = plugin_manager.registry("commands")
    names = [e.name for e in registry.in_order()]
    assert names[:2] == ["plugins", "list"] and names[-1] == "hello"  # core's first, in their order
    assert registry.get("hello").description == "Say hello." and registry.get("hello").plugin == "cmds"
    import sys

    sys.modules["cmd_plugin_target"] = target
    try:
        assert CliRunner().invoke(registry.load("hello")).output == "hello from a plugin\n"
    finally:
        del sys.modules["cmd_plugin_target"]


def _lifecycle_recorder(calls):
    class Recorder:
        @hookimpl
        def on_run_start(self, run_dir):  # a subset of (run_dir, config)
            calls.append(("start", run_dir))

        @hookimpl
        def on_rollout_end(self, step, trajectories):
            calls.append(("rollout", step, len(trajectories)))

        @hookimpl
        def on_step_end(self, step, metrics, run_dir):
            calls.append(("step", step, metrics["reward_mean"]))

        @hookimpl
        def on_checkpoint(self, path):
            calls.append(("ckpt", path))

        @hookimpl
        def on_run_end(self, status, metrics, main):
            calls.append(("end", status, metrics, main))

    return Recorder()


def _fire_all(manager):
    manager.hook.on_run_start(run_dir="runs/x", config={}, main=True)
    manager.hook.on_rollout_end(step=0, trajectories=[1, 2], run_dir="runs/x")
    manager.hook.on_step_end(step=0, metrics={"reward_mean": 0.5}, run_dir="runs/x")
    manager.hook.on_checkpoint(step=0, path="runs/x/checkpoints/step_000001", run_dir="runs/x")
    manager.hook.on_run_end(run_dir="runs/x", metrics={"a": 1.0}, status="completed", main=True)


def test_hook_on_run_start(plugin_manager, register_plugin):
    calls = []
    register_plugin(_lifecycle_recorder(calls), name="rec")
    _fire_all(plugin_manager)
    assert calls[0] == ("start", "runs/x")


def test_hook_on_rollout_end(plugin_manager, register_plugin):
    calls = []
    register_plugin(_lifecycle_recorder(calls), name="rec")
    _fire_all(plugin_manager)
    assert ("rollout", 0, 2) in calls


def test_hook_on_step_end(plugin_manager, register_plugin):
    calls = []
    register_plugin(_lifecycle_recorder(calls), name="rec")
    _fire_all(plugin_manager)
    assert ("step", 0, 0.5) in calls


def test_hook_on_checkpoint(plugin_manager, register_plugin):
    calls = []
    register_plugin(_lifecycle_recorder(calls), name="rec")
    _fire_all(plugin_manager)
    assert ("ckpt", "runs/x/checkpoints/step_000001") in calls


def test_hook_on_run_end(plugin_manager, register_plugin):
    calls = []
    register_plugin(_lifecycle_recorder(calls), name="rec")
    _fire_all(plugin_manager)
    assert calls[-1] == ("end", "completed", {"a": 1.0}, True)


def test_misspelt_hook_fails_at_registration(plugin_manager):
    mod = types.ModuleType("typo_plugin")
    mod.register_env = hookimpl(lambda registry: None)  # missing 's'
    with pytest.raises(PluginLoadError, match="'typo'.*register_env") as err:
        plugin_manager.register(mod, "typo")
    assert "Did you mean 'register_envs'" in str(err.value)
    assert "AGENTGYM_DISABLE_PLUGINS=typo" in str(err.value)
    assert "typo" not in plugin_manager.plugins  # nothing half-registered


def test_hook_that_raises_names_the_plugin(plugin_manager, register_plugin):
    def boom(registry):
        raise RuntimeError("kaputt")

    mod = types.ModuleType("boom_plugin")
    mod.register_envs = hookimpl(boom)
    with pytest.raises(PluginLoadError, match="plugin 'boom'.*register_envs.*kaputt.*AGENTGYM_DISABLE_PLUGINS=boom"):
        register_plugin(mod, name="boom")


def test_unregister_removes_components(plugin_manager, register_plugin):
    mod = types.ModuleType("temp_plugin")
    mod.register_envs = hookimpl(lambda registry: registry.add("tmp", "a:b"))
    register_plugin(mod, name="temp")
    assert "tmp" in plugin_manager.registry("envs")
    plugin_manager.unregister("temp")
    assert "tmp" not in plugin_manager.registry("envs")


def test_no_torch_after_loading_every_installed_plugin():
    """Core and every installed plugin's plugin.py must not import torch (fresh interpreter)."""
    code = (
        "import sys, json\n"
        "from agentgym_core.plugins import get_plugin_manager\n"
        "m = get_plugin_manager()\n"
        "heavy = [n for n in ('torch', 'transformers', 'vllm', 'accelerate', 'peft', 'matplotlib') if n in sys.modules]\n"
        "print(json.dumps({'plugins': sorted(m.plugins), 'heavy': heavy}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout)
    assert "core" in result["plugins"]
    assert result["heavy"] == [], f"plugin loading imported {result['heavy']}"


def test_import_core_imports_no_torch():
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import agentgym_core"],
        capture_output=True, text=True, check=True,
    )
    imported = {line.split("|")[-1].strip() for line in out.stderr.splitlines() if "|" in line}
    assert "agentgym_core" in imported
    assert not {m for m in imported if m.split(".")[0] in ("torch", "transformers", "numpy")}


def test_get_plugin_manager_is_cached():
    assert get_plugin_manager() is get_plugin_manager()
    assert get_plugin_manager(fresh=True) is not get_plugin_manager()


def test_unknown_names_in_the_plugin_switches_warn(monkeypatch, caplog):
    """A misspelt AGENTGYM_LOAD_PLUGINS would load nothing in silence: it warns, naming the installed plugins."""
    from importlib import metadata

    from agentgym_core.plugins import PluginManager

    installed = sorted({ep.name for ep in metadata.entry_points(group="agentgym")})
    if "babyai" not in installed:
        pytest.skip("needs the babyai plugin installed (scripts/setup.sh installs it)")
    monkeypatch.setenv("AGENTGYM_LOAD_PLUGINS", "babyia,babyai")
    monkeypatch.setenv("AGENTGYM_DISABLE_PLUGINS", "nosuch")
    manager = PluginManager()
    with caplog.at_level("WARNING", logger="agentgym.plugins"):
        manager.load_entrypoints()
    assert sorted(manager.plugins) == ["babyai"]  # the known name still loads
    messages = [r.getMessage() for r in caplog.records if r.name == "agentgym.plugins"]
    assert len(messages) == 2, messages
    load, disable = messages
    assert load.startswith("AGENTGYM_LOAD_PLUGINS names 'babyia', but no installed plugin is called that")
    assert "Did you mean 'babyai'?" in load and ", ".join(installed) in load
    assert disable.startswith("AGENTGYM_DISABLE_PLUGINS names 'nosuch'") and "Did you mean" not in disable
    caplog.clear()
    monkeypatch.setenv("AGENTGYM_LOAD_PLUGINS", "babyai")
    monkeypatch.delenv("AGENTGYM_DISABLE_PLUGINS")
    with caplog.at_level("WARNING", logger="agentgym.plugins"):
        PluginManager().load_entrypoints()
    assert not [r for r in caplog.records if r.name == "agentgym.plugins"]
