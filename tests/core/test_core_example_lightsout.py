"""examples/lightsout, the env third parties copy: bad options fail at construction with a clear
message, reset always ends, and agentgym_core.testing works without pytest as its README says."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentgym_core import ConfigError
from agentgym_core.testing import load_script

REPO = Path(__file__).resolve().parents[2]
ENV = load_script(REPO / "examples" / "lightsout" / "my_lightsout" / "env.py", "lightsout_env_example")
NO_BROKEN = {"AGENTGYM_DISABLE_PLUGINS": "broken"}


@pytest.mark.parametrize(
    "options, message",
    [
        ({"presses": 0}, "env.presses must be an integer >= 1 (random presses scramble the board at reset), got 0"),
        ({"size": 1}, "env.size must be an integer >= 2 (the board has size x size cells), got 1"),
        ({"size": 0}, "env.size must be an integer >= 2"),
        ({"size": "3"}, "env.size must be an integer >= 2 (the board has size x size cells), got '3'"),
        ({"presses": True}, "env.presses must be an integer >= 1"),
    ],
)
def test_out_of_range_options_are_refused_at_construction(options, message):
    with pytest.raises(ConfigError) as caught:
        ENV.LightsOutEnv(**options)
    assert message in str(caught.value)
    assert "set env." in str(caught.value)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("presses", [1, 2])
def test_reset_ends_with_a_lit_board_on_the_smallest_board(presses):
    env = ENV.LightsOutEnv(size=2, presses=presses)
    cancelled = 0
    for task_id in [*env.splits()["train"], *env.splits()["test"]]:
        board = env.reset(task_id=task_id)
        assert "#" in board, f"task {task_id}: reset gave a solved board {board!r}"
        cancelled += len(env.solution) > presses
        for row, col in env.solution:
            *_, done, info = env.step(f"press {row} {col}")
        assert done and info["success"], f"task {task_id}: pressing the scramble {env.solution} did not solve it"
    if presses == 2:  # a 2x2 board gets the same cell twice in about a quarter of the tasks
        assert cancelled > 100, "the case where the scramble presses cancel out was never exercised"


def test_actions_outside_the_board_or_format_are_invalid():
    env = ENV.LightsOutEnv()
    env.reset(task_id=3)
    for action in ("press 3 0", "press -1 0", "press ² 1", "pres 0 0", "press 0", "", "press 0 0 0"):
        obs, reward, done, info = env.step(action)
        assert info == {"invalid_action": True} and reward == 0.0 and not done, action
        assert "press <row> <col> with 0 <= row, col < 3" in obs
    for row, col in env.solution:  # the invalid actions left the board as it was
        *_, done, _ = env.step(f"press {row} {col}")
    assert done


def test_cli_refuses_bad_options_instead_of_hanging(run_cli, tmp_path):
    # Before the fix, presses=0 made reset loop forever: `env play` never printed a board.
    res = run_cli("env", "play", "lightsout", "--options", '{"presses": 0}', env=NO_BROKEN, input="")
    assert res.returncode == 1
    assert "env.presses must be an integer >= 1" in res.stderr and "Traceback" not in res.stderr
    cfg = tmp_path / "run.yaml"
    cfg.write_text("run: {name: demo}\nenv: {name: lightsout, size: 1}\n")
    res = run_cli("config", "show", "-c", str(cfg), env=NO_BROKEN)
    assert res.returncode == 1
    assert "env.size must be an integer >= 2" in res.stderr and "got 1" in res.stderr
    assert "Traceback" not in res.stderr


def test_check_env_and_play_over_http_work_without_pytest(third_party_site):
    # sys.modules["pytest"] = None makes `import pytest` fail as in a venv without it.
    script = textwrap.dedent("""
        import sys
        sys.modules["pytest"] = None
        import agentgym_core.testing as testing
        from my_lightsout.env import LightsOutEnv
        testing.check_env(LightsOutEnv)
        transcript = testing.play_over_http("lightsout", 3, ["press 0 2", "press 2 0"], invalid_action="jump",
                                            invalid_hint="press <row> <col>")
        print("fixtures:", hasattr(testing, "plugin_manager"), "success:", transcript.success)
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTGYM_")}
    env.update(PYTHONPATH=str(third_party_site), **NO_BROKEN)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "fixtures: False success: True" in res.stdout


def test_pytest_plugin_still_gives_the_fixtures(tmp_path):
    (tmp_path / "test_uses_fixtures.py").write_text(textwrap.dedent("""
        import types
        from agentgym_core import hookimpl

        def test_register(plugin_manager, register_plugin):
            plugin = types.SimpleNamespace(register_envs=hookimpl(
                lambda registry: registry.add("demo", "agentgym_core.env.base:BaseEnv")))
            register_plugin(plugin, name="demo-plugin")
            assert plugin_manager.registry("envs").get("demo").plugin == "demo-plugin"
    """))
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "1 passed" in res.stdout
