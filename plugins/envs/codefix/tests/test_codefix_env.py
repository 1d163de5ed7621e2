"""The codefix env: contract, fixed splits, task table, actions, and a scripted solver that wins."""
import random

import pytest

from agentgym_core.testing import check_env
from agentgym_env_codefix import plugin
from agentgym_env_codefix.env import CodeFixEnv
from agentgym_env_codefix.mutate import KINDS, mutations
from agentgym_env_codefix.problems import problems, split_of, tasks
from agentgym_env_codefix.solvers import random_actions, scripted_actions


@pytest.fixture(scope="module")
def env():
    e = CodeFixEnv()
    yield e
    e.close()


def test_check_env_passes():
    check_env(CodeFixEnv, task_ids=(0, 200))


def test_registered(plugin_manager, register_plugin):
    register_plugin(plugin, name="codefix")
    assert plugin_manager.registry("envs").load("codefix") is CodeFixEnv


def test_splits_are_fixed_and_problem_disjoint(env):
    splits = env.splits()
    assert len(splits["train"]) > 250 and len(splits["test"]) > 60
    assert sorted(splits["train"] + splits["test"]) == list(range(len(tasks())))
    train_problems = {tasks()[i].problem.task_id for i in splits["train"]}
    test_problems = {tasks()[i].problem.task_id for i in splits["test"]}
    assert not train_problems & test_problems
    assert all(problems()[p].number % 5 == 0 for p in test_problems)
    assert splits == CodeFixEnv().splits()


def test_every_task_is_a_small_parseable_bug():
    import ast

    kinds = set()
    for task in tasks():
        source = task.problem.source
        buggy = task.buggy_source
        assert buggy != source and ast.dump(ast.parse(buggy)) != ast.dump(ast.parse(source))
        assert task.mutation.line >= task.problem.first_solution_line
        assert task.split == split_of(task.problem)
        kinds.add(task.mutation.kind)
    assert kinds >= {"operator", "comparison", "off_by_one", "swap_args", "boolean"}
    assert kinds <= set(KINDS)


def test_mutations_are_reproducible():
    p = problems()["HumanEval/0"]
    first = mutations(p.source, p.first_solution_line)
    assert first == mutations(p.source, p.first_solution_line)
    assert [m.describe() for m in first][:2] == [
        "comparison at line 14: 'idx != idx2' -> 'idx == idx2'",
        "operator at line 15: 'elem - elem2' -> 'elem + elem2'",
    ]


@pytest.mark.parametrize("task_id", [0, 7, 150, 300])
def test_unchanged_submission_fails_some_tests(env, task_id):
    env.reset(task_id=task_id)
    obs, reward, done, info = env.step("submit")
    assert done and not info["success"]
    assert info["passed"] < info["total"] == tasks()[task_id].problem.n_tests
    assert reward == pytest.approx(info["passed"] / info["total"])


@pytest.mark.slow
def test_scripted_solver_reaches_success_on_several_tasks(env):
    test_ids = env.splits()["test"]
    chosen = [0, 41, 120] + [test_ids[0], test_ids[len(test_ids) // 2]]
    kinds = set()
    for task_id in chosen:
        env.reset(task_id=task_id)
        kinds.add(env.task.mutation.kind)
        for action in scripted_actions(env.task):
            obs, reward, done, info = env.step(action)
        assert done and info["success"], (task_id, obs)
        assert reward == 1.0 and info["passed"] == info["total"]
    assert len(kinds) >= 2


def test_reset_is_reproducible_and_restores_the_bug(env):
    first = env.reset(task_id=5)
    env.step("edit 1\n# changed")
    assert env.reset(task_id=5) == first
    assert env.reset(seed=3) == env.reset(seed=3)
    assert "solution.py" in first and "1 |" in first


def test_invalid_actions_get_helpful_observations(env):
    env.reset(task_id=0)
    n_lines = len(env.code.splitlines())
    cases = {
        "dance": "Unknown action",
        "": "Unknown action",
        "Action: edit 9999\nx = 1": f"outside solution.py (lines 1-{n_lines})",
        "Action: edit twelve\nx": "write 'edit N', 'edit N-M' or 'edit function'",
        "Action: edit function": "needs the complete new def",
    }
    for action, expected in cases.items():
        obs, reward, done, info = env.step(action)
        assert expected in obs and info.get("invalid_action") and not done and reward == 0.0, action
    assert env.code == tasks()[0].buggy_source  # nothing changed


def test_edit_forms_and_react_style_replies(env):
    env.reset(task_id=0)
    code = env.code
    obs, *_ = env.step("Thought: look first\nAction: view")
    assert obs.startswith("solution.py:")
    env.step("Thought: delete two lines\nAction: edit 2-3")
    assert env.code.splitlines() == code.splitlines()[:1] + code.splitlines()[3:]
    obs, *_ = env.step("Action: edit 1\n```python\nimport typing\n```\n")
    assert env.code.splitlines()[0] == "import typing" and "Replaced lines 1-1 with 1 line(s)" in obs
    env.step("edit 1\\nimport typing as t\\nimport math")  # one-line form typed in `agentgym env play`
    assert env.code.splitlines()[:2] == ["import typing as t", "import math"]
    fixed = tasks()[0].problem.prompt.split("def ")[0]  # imports only
    new_def = "def has_close_elements(numbers, threshold):\n    return any(abs(a - b) < threshold " \
              "for i, a in enumerate(numbers) for j, b in enumerate(numbers) if i != j)"
    env.step("Action: edit function\n" + new_def)
    assert fixed.strip() != "" and env.code.rstrip().endswith("if i != j)")
    obs, reward, done, info = env.step("submit")
    assert info["success"] and reward == 1.0
    obs, reward, done, info = env.step("run")
    assert done and "over" in obs


def test_syntax_error_is_reported_not_raised(env):
    env.reset(task_id=0)
    obs, *_ = env.step("edit 12\n    for idx elem in numbers:")
    assert "syntax error at line 12" in obs
    obs, reward, done, info = env.step("run")
    assert "SyntaxError" in obs and info["passed"] == 0


def test_random_agent_runs_without_crashing(env):
    rng = random.Random(0)
    for task_id in (3, 90):
        env.reset(task_id=task_id)
        for action in random_actions(env.task, rng):
            obs, reward, done, info = env.step(action)
        assert done and 0.0 <= reward <= 1.0


def test_every_scripted_action_can_be_written_as_a_reply():
    """The scripted solver's actions are the sft demonstrations (``agentgym demos codefix --expert scripted``): each must
    be a reply a model can write in the env's free format. A source line with trailing spaces made the edit end in
    whitespace, and recording the demonstrations stopped with "cannot be written as a free reply" (2026-12-07)."""
    from agentgym_core.conversation import reply_text

    for task in tasks():
        for action in scripted_actions(task):
            assert reply_text(action, "free") == action
