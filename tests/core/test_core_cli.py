"""The real CLI in subprocesses, with a third-party plugin installed by pip."""
import json
import subprocess
import sys

import pytest



def test_plugins_json_lists_internal_defaults(run_cli):
    res = run_cli("plugins", "--json", env={"AGENTGYM_DISABLE_PLUGINS": "broken"})
    assert res.returncode == 0, res.stderr
    plugins = {p["name"]: p for p in json.loads(res.stdout)}
    core = plugins["core"]
    assert core["internal"] and core["distribution"] == "agentgym-core"
    assert core["registered"] == {"rewards": ["env", "success"], "schedulers": ["fixed"], "backends": ["cpu"],
                                  "strategies": ["default"], "contexts": ["full", "window"],
                                  "commands": ["config", "demos", "env", "eval", "list", "new", "plugins", "rollout",
                                               "train"]}


def test_third_party_plugin_is_listed(run_cli):
    env = {"AGENTGYM_DISABLE_PLUGINS": "broken"}
    res = run_cli("plugins", "--json", env=env)
    plugins = {p["name"]: p for p in json.loads(res.stdout)}
    assert plugins["lightsout"]["distribution"] == "my-lightsout"
    assert plugins["lightsout"]["version"] == "0.1.0"
    assert plugins["lightsout"]["registered"] == {"envs": ["lightsout"]}
    res = run_cli("list", "envs", env=env)
    assert res.returncode == 0 and "lightsout" in res.stdout and "[lightsout]" in res.stdout


def test_close_match_for_misspelt_env(run_cli):
    res = run_cli("config", "show", "env.name=lightout", env={"AGENTGYM_DISABLE_PLUGINS": "broken"})
    assert res.returncode == 1
    assert "Did you mean 'lightsout'?" in res.stderr
    assert "Traceback" not in res.stderr


def test_names_in_another_case_and_singular_kinds_are_understood(run_cli):
    """`LightsOut` gets a did-you-mean for `lightsout` (case ignored); `agentgym list env` lists the envs, and a
    kind that is no kind is refused naming the kinds."""
    env = {"AGENTGYM_DISABLE_PLUGINS": "broken"}
    res = run_cli("config", "show", "env.name=LightsOut", env=env)
    assert res.returncode == 1 and "Did you mean 'lightsout'?" in res.stderr and "Traceback" not in res.stderr
    for kind in ("env", "Envs", "ENV"):
        res = run_cli("list", kind, env=env)
        assert res.returncode == 0 and "lightsout" in res.stdout, (kind, res.stderr)
    res = run_cli("list", "envz", env=env)
    assert res.returncode == 2 and "'envz' is not a kind of plugin. Did you mean 'envs'?" in res.stderr


def test_broken_plugin_one_clear_error_then_disable(run_cli):
    res = run_cli("plugins")
    assert res.returncode == 1
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, res.stderr
    assert "plugin 'broken'" in lines[0] and "broken-agentgym-plugin" in lines[0]
    assert "frobnicate" in lines[0] and "AGENTGYM_DISABLE_PLUGINS=broken" in lines[0]
    res = run_cli("plugins", env={"AGENTGYM_DISABLE_PLUGINS": "broken"})
    assert res.returncode == 0 and "lightsout" in res.stdout


def test_switched_off_plugin_is_named_as_installed_but_not_loaded(run_cli):
    pytest.importorskip("agentgym_env_babyai")
    res = run_cli("config", "show", "env.name=babyai", env={"AGENTGYM_DISABLE_PLUGINS": "broken,babyai"})
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert "installed but not loaded because of AGENTGYM_DISABLE_PLUGINS='broken,babyai'" in res.stderr


def test_debug_shows_traceback(run_cli):
    res = run_cli("--debug", "plugins")
    assert res.returncode != 0 and "Traceback" in res.stderr


def test_load_plugins_allow_list(run_cli):
    res = run_cli("plugins", "--json", env={"AGENTGYM_LOAD_PLUGINS": "lightsout"})
    assert res.returncode == 0, res.stderr
    assert {p["name"] for p in json.loads(res.stdout)} == {"core", "lightsout"}
    res = run_cli("plugins", "--json", env={"AGENTGYM_LOAD_PLUGINS": ""})
    assert [p["name"] for p in json.loads(res.stdout)] == ["core"]


def test_config_show_resolves_and_rejects_misspelt_key(run_cli, tmp_path):
    cfg = tmp_path / "run.yaml"
    cfg.write_text("run: {name: demo}\nenv: {name: lightsout, size: 4}\nscheduler: {name: fixed, turns: 3}\n")
    env = {"AGENTGYM_DISABLE_PLUGINS": "broken"}
    res = run_cli("config", "show", "-c", str(cfg), "scheduler.turns=7", env=env)
    assert res.returncode == 0, res.stderr
    assert "turns: 7" in res.stdout and "size: 4" in res.stdout and "name: demo" in res.stdout
    res = run_cli("config", "show", "-c", str(cfg), "scheduler.turnz=7", env=env)
    assert res.returncode == 1
    assert "scheduler.turnz" in res.stderr and "Did you mean 'turns'?" in res.stderr


def test_help_and_unknown_command(run_cli):
    res = run_cli("--help", site=False)
    assert res.returncode == 0 and "plugins" in res.stdout and "config" in res.stdout
    res = run_cli("frobnicate", site=False)
    assert res.returncode != 0 and "unknown command 'frobnicate'" in res.stderr and "Installed commands:" in res.stderr
    res = run_cli("trian", site=False)
    assert res.returncode != 0 and "Did you mean 'train'?" in res.stderr


def test_plugin_commands_come_from_the_hook(run_cli):
    """view/report are the inspect distribution's: listed when it is loaded, named when it is switched off."""
    pytest.importorskip("agentgym_inspect")
    def commands(text):
        return {line.split()[0] for line in text.split("Commands:")[1].splitlines() if line.strip()}

    res = run_cli("--help", env={"AGENTGYM_DISABLE_PLUGINS": "broken"})
    assert res.returncode == 0 and {"view", "report", "train"} <= commands(res.stdout)
    res = run_cli("--help", env={"AGENTGYM_DISABLE_PLUGINS": "broken,inspect"})
    assert res.returncode == 0 and "train" in commands(res.stdout) and not {"view", "report"} & commands(res.stdout)
    res = run_cli("view", "runs/x", env={"AGENTGYM_DISABLE_PLUGINS": "broken,inspect"})
    assert res.returncode != 0
    assert "provided by 'agentgym-inspect', which is installed but not loaded" in res.stderr


def test_new_plugin_template_installs_and_is_listed(run_cli, tmp_path, pip_install_target):
    res = run_cli("new", "plugin", "guess", "--kind", "env", "-o", str(tmp_path), site=False)
    assert res.returncode == 0, res.stderr
    pkg = tmp_path / "agentgym-env-guess"
    site = tmp_path / "site"
    pip_install_target(pkg, site)
    res = run_cli("list", "envs", site=False, env={"PYTHONPATH": str(site)})
    assert res.returncode == 0 and "guess" in res.stdout
    # the generated tests pass too
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(pkg / "tests")],
                         capture_output=True, text=True, env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stdout + out.stderr
    res = run_cli("new", "plugin", "Bad Name", site=False)
    assert res.returncode == 1 and "must be lower-case" in res.stderr
