"""Fast tests of the webnav env's parts that need no browser: actions, rendering, task ids,
the solver's reading of observations, config errors and registration."""
from __future__ import annotations

import subprocess
import sys

import pytest

from agentgym_core.errors import AgentGymError, ConfigError
from agentgym_env_webnav import page
from agentgym_env_webnav.browser import BrowserNotFound, find_binaries
from agentgym_env_webnav.env import WebNavEnv
from agentgym_env_webnav.solver import ScriptedSolver, parse_observation
from agentgym_env_webnav.tasks import TASKS, TaskSet, available_tasks


@pytest.mark.parametrize("text, verb, target, arg", [
    ("click [12]", "click", 12, ""),
    ("Thought: the button is 3\nAction: click [3]", "click", 3, ""),
    ("Click the OK button first.\nAction: click [8]", "click", 8, ""),
    ("Action: `type [5] [hello world]`", "type", 5, "hello world"),
    ("type [5] [a [bracketed] text]", "type", 5, "a [bracketed] text"),
    ("type [5] plain words", "type", 5, "plain words"),
    ("select [7] [New Zealand]", "select", 7, "New Zealand"),
    ("press [Enter]", "press", None, "Enter"),
    ("scroll [up]", "scroll", None, "up"),
    ("CLICK 4", "click", 4, ""),
])
def test_parse_accepts_the_documented_actions(text, verb, target, arg):
    action = page.parse(text)
    assert (action.verb, action.target, action.arg) == (verb, target, arg)


@pytest.mark.parametrize("text, hint", [
    ("dance wildly", "click [id]"),
    ("click [submit]", "element id in brackets"),
    ("select [3]", "needs an option"),
    ("scroll [sideways]", "'up' or 'down'"),
    ("press [hyperspace]", "unknown key"),
])
def test_parse_rejects_with_a_hint(text, hint):
    with pytest.raises(page.InvalidAction, match=hint.replace("[", r"\[").replace("(", r"\(")):
        page.parse(text)


def test_render_shows_ids_roles_values_and_nesting():
    snap = {"url": "file:///x", "title": "t", "scroll": [0, 0], "elements": [
        {"id": 1, "tag": "div", "depth": 0, "text": "", "clickable": True},
        {"id": 2, "tag": "input", "type": "text", "depth": 1, "text": "", "value": "ab\"c", "focused": True},
        {"id": 3, "tag": "input", "type": "checkbox", "depth": 1, "text": "", "label": "Red", "checked": False},
        {"id": 4, "tag": "select", "depth": 1, "text": "", "value": "B", "options": ["A", "B"]},
        {"id": 5, "tag": "button", "depth": 1, "text": "Go", "role": "tab"},
    ]}
    assert page.render(snap).splitlines() == [
        "[1] div clickable",
        '  [2] textbox value="ab\\"c" focused',
        '  [3] checkbox "Red" unchecked',
        '  [4] combobox value="B" options=["A", "B"]',
        '  [5] tab "Go"',
    ]
    assert "1 more elements not shown" in page.render(snap, max_elements=4)


def test_task_ids_map_reproducibly_and_splits_are_disjoint():
    ts = TaskSet(TASKS, train_seeds=10, test_seeds=2)
    splits = ts.splits()
    assert len(splits["train"]) == 10 * len(TASKS) and len(splits["test"]) == 2 * len(TASKS)
    assert not set(splits["train"]) & set(splits["test"])
    seen = {ts.lookup(i)[:2] for i in list(splits["train"]) + list(splits["test"])}
    assert len(seen) == 12 * len(TASKS)  # every id is a distinct (task, seed)
    assert ts.lookup(0) == (TASKS[0], 0, "train")
    assert ts.lookup(splits["test"][0]) == (TASKS[0], 10, "test")
    assert set(TASKS) <= set(available_tasks())


def test_env_describes_itself_without_starting_a_browser():
    env = WebNavEnv(tasks=["click-test", "enter-text"], train_seeds=3, test_seeds=1)
    try:
        assert env.browser is None
        assert env.category(1) == "enter-text" and env.category(2) == "click-test"
        info = env.describe()
        assert info["tasks"] == ["click-test", "enter-text"] and info["splits"] == {"train": 6, "test": 2}
        assert "click [id]" in env.instruction
        assert env.step("click [1]")[3]["invalid_action"]  # no episode yet: an answer, not a crash
    finally:
        env.close()
    assert env.browser is None


@pytest.mark.parametrize("options, match", [
    ({"tasks": ["click-buton"]}, "unknown MiniWoB task"),
    ({"mode": "wobarena"}, "env.mode"),
    ({"reward": "scaled"}, "env.reward"),
])
def test_bad_options_name_the_key(options, match):
    with pytest.raises(ConfigError, match=match):
        WebNavEnv(**options)


def test_missing_browser_says_how_to_install(tmp_path):
    with pytest.raises(BrowserNotFound, match="chromium chromium-driver") as err:
        find_binaries(str(tmp_path / "no-chromium"), str(tmp_path / "no-driver"))
    assert isinstance(err.value, AgentGymError)


def test_solver_reads_observation_text():
    obs = ('Task: Enter the username "ann" and the password "x1" into the text fields and press login.\n'
           'Page:\n[1] label "Username"\n[2] textbox value="ann"\n[3] label "Password"\n'
           '[4] password value=""\n[5] button "Login"')
    task, els = parse_observation(obs)
    assert task.startswith("Enter the username") and [e.id for e in els] == [1, 2, 3, 4, 5]
    assert ScriptedSolver().act(obs) == "type [4] [x1]"
    assert ScriptedSolver().act(obs.replace('value=""', 'value="x1"')) == "click [5]"
    assert ScriptedSolver().act("Task: Do a barrel roll.\nPage:\n[1] button \"Roll\"") is None


def test_plugin_registers_webnav_without_importing_selenium():
    code = (
        "import sys\n"
        "from agentgym_core.plugins import get_plugin_manager\n"
        "entry = get_plugin_manager(fresh=True).registry('envs').get('webnav')\n"
        "assert entry.target == 'agentgym_env_webnav.env:WebNavEnv', entry.target\n"
        "heavy = [m for m in ('selenium', 'miniwob', 'torch') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
