"""The webnav env in a real headless Chromium on the bundled MiniWoB++ pages. One browser
is shared by the module; cleanup is checked on browsers of their own."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from agentgym_core.testing import check_env
from agentgym_env_webnav.browser import POOL, BrowserNotFound, find_binaries, process_tree
from agentgym_env_webnav.env import WebNavEnv
from agentgym_env_webnav.solver import ScriptedSolver, parse_observation
from agentgym_env_webnav.tasks import TASKS

try:
    find_binaries()
except BrowserNotFound as exc:  # CI installs Chromium through scripts/setup.sh: never skip there
    if os.environ.get("CI"):
        raise
    pytest.skip(f"needs Chromium: {exc}", allow_module_level=True)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def env():
    instance = WebNavEnv()
    yield instance
    instance.close()


def play(env, task_id, max_steps=8):
    """Run the scripted solver on *task_id*; return (final reward, info, actions)."""
    obs, solver, reward, info = env.reset(task_id=task_id), ScriptedSolver(), 0.0, {}
    for _ in range(max_steps):
        action = solver.act(obs)
        assert action is not None, f"solver has no action for:\n{obs}"
        obs, reward, done, info = env.step(action)
        assert not info.get("invalid_action"), obs
        if done:
            return reward, info, solver.done_actions
    raise AssertionError(f"task {task_id} not finished after {max_steps} steps:\n{obs}")


def test_scripted_solver_succeeds_on_every_default_task(env):
    wins = {}
    for task_id in env.splits()["test"][: len(TASKS)]:
        reward, info, actions = play(env, task_id)
        wins[info["task"]] = info["success"]
        assert reward == info["raw_reward"] > 0 and info["normalized_reward"] > 0.5, (info, actions)
    assert wins == {task: True for task in TASKS}


def test_reset_is_reproducible_across_tasks(env):
    first = {tid: env.reset(task_id=tid) for tid in (2, 7, 2 + len(TASKS))}
    env.step("click [1]")
    assert env.reset(task_id=2) == first[2]
    assert env.reset(task_id=7) == first[7]
    assert first[2] != first[2 + len(TASKS)]  # same task, next seed: another page


def test_wrong_click_fails_with_negative_reward(env):
    obs = env.reset(task_id=TASKS.index("click-test-2"))
    task, els = parse_observation(obs)
    wanted = task.split()[-1].rstrip(".")
    wrong = next(e for e in els if e.role == "button" and e.text != wanted)
    obs, reward, done, info = env.step(f"click [{wrong.id}]")
    assert done and reward == -1.0 and info["success"] is False and info["normalized_reward"] == 0.0
    assert "failure" in obs
    obs, reward, done, info = env.step(f"click [{wrong.id}]")
    assert done and reward == 0.0 and "reset" in obs


@pytest.mark.parametrize("action, hint", [
    ("fly to the moon", "write one of: click [id]"),
    ("click [999]", "no element [999]"),
    ("select [2] [Submit]", "not a list"),
    ("type [2] [hello]", "not a text field"),
])
def test_invalid_actions_get_a_helpful_observation(env, action, hint):
    obs = env.reset(task_id=TASKS.index("enter-text"))
    assert "[2] button \"Submit\"" in obs
    obs, reward, done, info = env.step(action)
    assert info["invalid_action"] and not done and reward == 0.0
    assert hint in obs and "Page:\n[1] textbox" in obs  # says why, and shows the page again
    obs, _, _, _ = env.step("type [1] [still works]")
    assert 'value="still works"' in obs


def test_typing_replaces_and_selecting_picks_an_option(env):
    obs = env.reset(task_id=TASKS.index("choose-list"))
    _, els = parse_observation(obs)
    combo = next(e for e in els if e.role == "combobox")
    last = combo.rest.split('options=[')[1].rstrip("]").split(", ")[-1].strip('"')
    obs, _, done, info = env.step(f"select [{combo.id}] [{last}]")
    assert not done and f'value="{last}"' in obs
    obs, _, _, info = env.step(f"select [{combo.id}] [Atlantis]")
    assert info["invalid_action"] and "no option 'Atlantis'" in obs


def test_normalized_reward_mode_and_check_env():
    check_env(WebNavEnv, options={"tasks": ["click-test-2", "enter-text"], "reward": "normalized", "native_clicks": True},
              actions=("click [1]", "look", "invalid action $$$"))


def test_reset_recovers_from_a_dead_browser_and_close_stops_every_process():
    env = WebNavEnv(tasks=["click-test"], browser_pool=0)
    env.reset(task_id=0)
    old = env.browser
    old.driver.quit()  # the browser goes away under the env (crash, OOM kill)
    obs = env.reset(task_id=0)
    assert obs.startswith("Task: Click the button.") and env.browser is not old
    assert env.step("click [1]")[3]["success"]
    assert not os.path.exists(old.profile)
    browser = env.browser
    pids = process_tree(browser.driver_pid)
    assert len(pids) >= 2 and os.path.isdir(browser.profile)
    assert env.memory_kib() > 10_000
    env.close()
    env.close()  # idempotent
    assert not _alive(pids), f"left running: {_alive(pids)}"
    assert not os.path.exists(browser.profile)


def test_a_closed_sessions_browser_is_cleaned_reused_and_quit_when_idle():
    """A rollout opens a session per episode: the next session gets the closed one's browser instead of starting
    Chromium, and sees nothing of the last session (its page, storage, windows); beyond ``browser_pool`` idle
    browsers are quit, a dead one is not handed out, and after ``browser_idle_s`` every idle one is gone."""
    POOL.clear()
    options = {"tasks": ["enter-text"], "browser_pool": 1, "browser_idle_s": 2.0}
    first = WebNavEnv(**options)
    fresh = first.reset(task_id=3)
    kept, reused = first.browser, POOL.reused
    driver = kept.driver
    driver.execute_script("localStorage.setItem('left-behind', 'x'); window.open('about:blank');")
    assert first.step("type [2] [left behind]")[0] != fresh
    first.close()
    assert POOL.idle() == 1 and not kept.closed

    second = WebNavEnv(**options)
    assert second.reset(task_id=3) == fresh  # the page a new browser shows
    assert second.browser is kept and POOL.reused == reused + 1
    assert driver.execute_script("return localStorage.getItem('left-behind');") is None
    assert len(driver.window_handles) == 1

    third = WebNavEnv(**options)  # the pool is empty: a browser of its own
    third.reset(task_id=3)
    other = third.browser
    assert other is not kept
    second.close()
    third.close()  # two idle, one kept: the older one is quit
    assert kept.closed and not other.closed and POOL.idle() == 1

    other.driver.quit()  # dies while idle: not handed out
    fourth = WebNavEnv(**options)
    assert fourth.reset(task_id=3) == fresh and fourth.browser is not other and other.closed
    last = fourth.browser
    pids = process_tree(last.driver_pid)
    fourth.close()
    deadline = time.monotonic() + 8
    while (_alive(pids) or not last.closed) and time.monotonic() < deadline:  # the reaper thread tears it down
        time.sleep(0.1)
    assert not _alive(pids) and last.closed and POOL.idle() == 0, f"idle browser left running: {_alive(pids)}"
    assert not os.path.exists(last.profile)


def test_a_process_that_forgets_close_leaves_no_browser_behind(tmp_path):
    """An env server killed politely (or a script that never calls close) must not leak Chromium."""
    pid_file = tmp_path / "pids"
    code = (
        "import sys\n"
        "from agentgym_env_webnav.env import WebNavEnv\n"
        "from agentgym_env_webnav.browser import process_tree\n"
        "env = WebNavEnv(tasks=['click-test']); env.reset(task_id=0)\n"
        "open(sys.argv[1], 'w').write(' '.join(map(str, process_tree(env.browser.driver_pid))))\n"
    )
    subprocess.run([sys.executable, "-c", code, str(pid_file)], check=True, timeout=60)
    pids = [int(p) for p in pid_file.read_text().split()]
    assert len(pids) >= 2
    deadline = time.monotonic() + 5
    while _alive(pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pids), f"orphaned browser processes: {_alive(pids)}"


def _alive(pids):
    alive = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] != "Z":
                    alive.append(pid)
        except OSError:
            pass
    return alive

