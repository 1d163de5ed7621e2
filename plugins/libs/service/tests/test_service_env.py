"""The kit's guards on a small env written from its public API (tests/library_env.py)."""
from __future__ import annotations

import pytest

from agentgym_core.testing import check_env
from library_env import LibraryEnv

CONFIRM = 'respond("I will renew Book 0 (L0) by 14 days. Do you confirm?")'


def start(task_id=0, **options):
    env = LibraryEnv(num_tasks=20, ood_tasks=4, **options)
    env.reset(task_id=task_id)
    return env


def run(env, *actions):
    out = None
    for action in actions:
        out = env.step(action)
    return out


def test_contract_and_splits():
    check_env(LibraryEnv, options={"num_tasks": 20, "ood_tasks": 4})
    env = LibraryEnv(num_tasks=20, ood_tasks=4)
    splits = env.splits()
    assert sorted(list(splits["train"]) + list(splits["test"])) == list(range(20)) and list(splits["ood"]) == [20, 21, 22, 23]
    assert env.world(3) == (0, "iid") and env.world(21)[1] == "ood"
    assert {t["function"]["name"] for t in env.describe()["tools"]} == {"respond", "identify", "get_loan", "renew_loan",
                                                                          "transfer_to_human"}


def test_the_right_confirmed_change_succeeds_and_says_nothing_privileged():
    env = start()
    obs, _, _, info = env.step('respond("Which loan, and your card?")')
    assert "C1" in obs and "L0" in obs and set(info) == {"success", "invalid_action", "action_failed", "turns"}
    assert "Yes" in run(env, 'identify("C1")', 'get_loan("L0")', CONFIRM)[0]
    due = env.db.loans["L0"].due + 14
    obs, reward, done, info = run(env, 'renew_loan("L0")', f'respond("Done. It is due in ${due}.00 days.")')
    assert done and reward == 1.0 and info["success"] and info["db_match"]


@pytest.mark.parametrize("message, answer", [
    ('respond("May I go ahead with L0?")', "what"),                               # no action named
    ('respond("I will renew L0 and close your account. Do you confirm?")', "only want"),   # an extra action
    ('respond("I will renew L1. Do you confirm?")', "It's loan L0"),              # another loan
])
def test_a_confirmation_counts_only_if_it_describes_the_change(message, answer):
    env = start()
    obs = run(env, 'respond("Your card and which loan?")', 'identify("C1")', message)[0]
    assert answer in obs and "Yes" not in obs
    obs, reward, done, info = env.step('renew_loan("L0")')
    assert done and reward == 0.0 and info["end_reason"] == "a change the user did not confirm"


def test_identity_is_locked_and_reading_another_members_data_ends_with_zero():
    env = start()
    run(env, 'respond("Your card?")', 'identify("C1")')
    obs, _, done, info = env.step('identify("C2")')
    assert not done and "cannot change" in obs and info["invalid_action"]
    obs, reward, done, info = env.step('get_loan("L3")')
    assert done and reward == 0.0 and "someone other than the authenticated user" in info["end_reason"]


def test_a_refusal_counts_only_after_the_request_was_elicited():
    env = start(task_id=1)  # renew L0, then the overdue L2 (forbidden)
    due = env.db.loans["L0"].due + 14
    run(env, 'respond("Your card and which loan?")', 'identify("C1")', 'get_loan("L0")', CONFIRM, 'renew_loan("L0")')
    obs = env.step(f'respond("Done, due in ${due}.00.")')[0]
    assert "renew a book" in obs  # the second request, vague
    obs, _, done, _ = env.step('respond("I cannot do that.")')  # before asking which loan: does not count
    assert not done and "haven't even looked" in obs
    run(env, 'respond("Which loan?")', 'get_loan("L2")')
    obs, reward, done, info = env.step('respond("I am afraid I cannot renew L2: it is overdue.")')
    assert done and reward == 1.0, obs


def test_a_forbidden_write_and_an_unwanted_one_end_with_zero():
    env = start(task_id=1)
    run(env, 'respond("Your card?")', 'identify("C1")')
    obs, reward, done, info = env.step('renew_loan("L2")')
    assert done and reward == 0.0 and info["end_reason"].startswith("policy: overdue")
    env = start()
    run(env, 'respond("Your card?")', 'identify("C1")')
    obs, reward, done, info = env.step('renew_loan("L1")')
    assert done and reward == 0.0 and info["end_reason"] == "a change the user did not ask for"


@pytest.mark.parametrize("action, says", [
    ('Sure, I will not call renew_loan("L0")', "inside other text"),
    ('Action: get_loan("L0")\nAction: renew_loan("L0")', "one action per turn"),
    ('get_loan("L0") and then renew_loan("L0")', "write only the call"),
    ('{"name": "renew_loan", "arguments": {"loan_id": ' + "[" * 1900 + "]" * 1900 + "}}", "does not parse"),
    ('{"name": "get_loan", "arguments": {"loan_id": {"a": [1]}}}', "must be a string"),
    ('get_loan(' + "9" * 5000 + ')', "limit is 4000"),
    ("x" * 20000, "limit is 4000"),
    ('{"name": "get_loan", "arguments": {"loan_id": [["L0"]]}}', "must be a string"),
    ("\u0000\ud800 \u202e \U0001d54f", "is not a tool call"),
])
def test_malformed_actions_are_error_observations(action, says):
    env = start()
    obs, reward, done, info = env.step(action)
    assert says in obs and info["invalid_action"] and not done and reward == 0.0


def test_privileged_info_is_off_by_default_and_documented_when_on():
    env = start(privileged_info=True)
    info = env.step('respond("Hi")')[3]
    assert info["task"]["requests"] == ["renew"]
