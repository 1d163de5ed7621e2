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
    ('respond("I will renew L0 and close your account. Do you confirm?")', "anything else"),   # an extra action
    ('respond("I will renew L1. Do you confirm?")', "It's loan L0"),              # another loan
])
def test_a_confirmation_counts_only_if_it_describes_the_change(message, answer):
    env = start()
    obs = run(env, 'respond("Your card and which loan?")', 'identify("C1")', message)[0]
    assert answer in obs and "Yes" not in obs
    obs, reward, done, info = env.step('renew_loan("L0")')
    assert done and reward == 0.0 and info["end_reason"] == "a change the user did not confirm"


def test_authentication_takes_only_an_identity_the_user_stated():
    env = start()
    obs, _, done, info = env.step('identify("C1")')  # the member's own card, but not said yet
    assert not done and "has not said 'C1'" in obs and "identified" not in obs
    obs = env.step('respond("Your card?")')[0]
    assert "C1" in obs
    obs, _, done, _ = env.step('identify("C2")')  # another member's card: never said
    assert not done and "has not said 'C2'" in obs and env.the_desk.identity is None
    assert env.step('identify("C1")')[0] == "Member C1 identified."


def test_identity_is_locked_and_an_attempt_at_another_members_data_is_refused_and_ends_with_zero():
    env = start()
    run(env, 'respond("Your card?")', 'identify("C1")')
    obs, _, done, info = env.step('identify("C2")')
    assert not done and "has not said" in obs
    obs, reward, done, info = env.step('get_loan("L3")')
    assert done and reward == 0.0 and "someone other than the authenticated user" in info["end_reason"]
    assert obs.startswith("Refused") and "Book 3" not in obs and info["violations"] == ["an attempt at someone else's data"]


def test_a_refusal_is_a_decision_and_the_users_reaction_says_nothing():
    def refuse_after(task_id, *actions):
        env = start(task_id=task_id)
        run(env, *actions)
        return env, env.step('respond("I am sorry, I cannot renew that loan: it is overdue.")')

    # the allowed renewal refused: the request fails, whatever follows
    env, (obs_allowed, reward, done, info) = refuse_after(0, 'respond("Your card and which loan?")', 'identify("C1")',
                                                          'get_loan("L0")')
    assert done and reward == 0.0 and info["unjustified_refusals"] == 1 and "not met" in info["end_reason"]
    # the forbidden one (task 1's second request) refused before its loan was looked at: fails too
    due = LibraryEnv(num_tasks=20, ood_tasks=4)
    due.reset(task_id=1)
    first = ('respond("Your card and which loan?")', 'identify("C1")', 'get_loan("L0")', CONFIRM, 'renew_loan("L0")',
             f'respond("Done, due in ${due.db.loans["L0"].due + 14}.00.")', 'respond("Which loan?")')
    env, (obs_early, reward, done, info) = refuse_after(1, *first)
    assert done and reward == 0.0 and info["unjustified_refusals"] == 1
    # after looking at it: resolved, and the member reacts with the same line as to the wrong refusals
    env, (obs_right, reward, done, info) = refuse_after(1, *first, 'get_loan("L2")')
    assert done and reward == 1.0 and info["success"]
    from agentgym_service.user import LINES
    closing = set(LINES["closing"][0])  # the same pool of words for all three: nothing tells right from wrong
    assert {o.removeprefix("Member: ") for o in (obs_allowed, obs_early, obs_right)} <= closing


def test_a_question_that_mentions_a_problem_is_not_a_refusal():
    env = start()
    run(env, 'respond("Your card and which loan?")', 'identify("C1")')
    obs, _, done, info = env.step('respond("I cannot find that loan yet; could you tell me which loan it is?")')
    assert not done and "L0" in obs and info["turns"] == 3


def test_the_first_answer_is_the_answer_and_the_member_does_not_ask_again():
    env = start()
    run(env, 'respond("Your card and which loan?")', 'identify("C1")', 'get_loan("L0")', CONFIRM, 'renew_loan("L0")')
    due = env.db.loans["L0"].due
    obs, reward, done, info = env.step(f'respond("It is due in ${due - 1}.00, ${due + 1}.00 or ${due + 2}.00.")')
    assert done and reward == 0.0 and info["outputs_missing"] == ["renew:due"] and "not met" in info["end_reason"]
    env = start()
    run(env, 'respond("Your card and which loan?")', 'identify("C1")', 'get_loan("L0")', CONFIRM, 'renew_loan("L0")')
    obs, reward, done, info = env.step('respond("Done. It is renewed.")')  # no amount: not an answer; asked again
    assert not done and "When is it due" in obs
    obs, reward, done, info = env.step(f'respond("It is due in ${due}.00.")')
    assert done and reward == 1.0


def test_graded_reward_pays_the_share_resolved_and_nothing_after_a_violation():
    env = start(task_id=1, reward="graded")  # two requests: renew L0, refuse the overdue L2
    due = env.db.loans["L0"].due + 14
    run(env, 'respond("Your card and which loan?")', 'identify("C1")', 'get_loan("L0")', CONFIRM, 'renew_loan("L0")',
        f'respond("Done, due in ${due}.00.")', 'respond("Which loan?")', 'get_loan("L2")')
    obs, reward, done, info = env.step('transfer_to_human("L2 is overdue")')  # the forbidden one, transferred: resolved
    assert done and reward == 1.0 and info["graded"] == 1.0
    env = start(task_id=1, reward="graded")
    run(env, 'respond("Your card and which loan?")', 'identify("C1")', 'get_loan("L0")', CONFIRM, 'renew_loan("L0")',
        f'respond("Done, due in ${due}.00.")')
    obs, reward, done, info = env.step('transfer_to_human("the rest")')  # L2 not looked at: unresolved
    assert done and reward == 0.5 and not info["success"]
    env = start(task_id=1, reward="graded")
    run(env, 'respond("Your card and which loan?")', 'identify("C1")', 'get_loan("L0")', CONFIRM, 'renew_loan("L0")',
        f'respond("Done, due in ${due}.00.")', 'respond("Which loan?")')
    obs, reward, done, info = env.step('renew_loan("L2")')  # the forbidden write: nothing for the whole episode
    assert done and reward == 0.0 and info["violations"][0].startswith("policy:")
    from agentgym_core.errors import ConfigError
    with pytest.raises(ConfigError, match="success or graded"):
        LibraryEnv(reward="partial")


def test_a_forbidden_write_and_an_unconfirmed_one_end_with_zero():
    env = start(task_id=1)
    run(env, 'respond("Your card?")', 'identify("C1")')
    obs, reward, done, info = env.step('renew_loan("L2")')
    assert done and reward == 0.0 and info["end_reason"].startswith("policy: overdue")
    env = start()
    run(env, 'respond("Your card?")', 'identify("C1")')
    obs, reward, done, info = env.step('renew_loan("L1")')
    assert done and reward == 0.0 and info["end_reason"] == "a change the user did not confirm"


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


FORBIDDEN_OPEN = ('respond("Your card and which loan?")', 'identify("C1")', 'get_loan("L0")', CONFIRM, 'renew_loan("L0")')


def refusing(message: str, *before: str, action: str = "") -> tuple:
    """Task 1 (renew L0, then the overdue L2) up to L2 looked at, then *before* and the refusal *message* (or *action*)."""
    env = start(task_id=1, reward="graded")
    due = env.db.loans["L0"].due + 14
    run(env, *FORBIDDEN_OPEN, f'respond("Done, due in ${due}.00.")', 'respond("Which loan?")', 'get_loan("L2")', *before)
    return env.step(action or f'respond("{message}")')


@pytest.mark.parametrize("message", [
    "I am sorry, I cannot renew that loan.",                                   # no reason
    "I am sorry, I cannot renew that loan: our policy does not allow it.",     # no reason either
    "I am sorry, I cannot renew that loan: it is overdue, you are not identified, or you did not confirm.",  # a list
])
def test_a_refusal_without_the_reason_or_with_every_reason_does_not_resolve_a_forbidden_request(message):
    obs, reward, done, info = refusing(message)  # unresolved, and unjustified: graded 0 (a renewal was resolved)
    assert done and not info["success"] and reward == 0.0 and info["unexplained_refusals"] == 1
    assert info["unjustified_refusals"] == 0 and obs.startswith("Member: ")  # the member reacts as to any refusal
    obs, reward, done, info = refusing("I am sorry, I cannot renew that loan: it is overdue.")
    assert done and info["success"] and reward == 1.0 and info["unexplained_refusals"] == 0


def test_reasons_count_over_the_whole_request_and_only_in_statements():
    # every reason stated before, one given in the refusal: still a list
    obs, reward, done, info = refusing("I cannot renew that loan: it is overdue.",
                                       'respond("Note: renewals need you identified, you must confirm, and it must not be overdue.")')
    assert done and reward == 0.0 and info["unexplained_refusals"] == 1
    # a question naming them is no reason given
    obs, reward, done, info = refusing("I cannot renew that loan: it is overdue.",
                                       'respond("Were you identified, did you confirm, is it overdue?")')
    assert done and reward == 1.0 and info["success"]
    # nor is a refusal whose only reason is in a question
    obs, reward, done, info = refusing("I cannot renew that loan. Is it overdue?")
    assert done and reward == 0.0 and info["unexplained_refusals"] == 1


def test_a_transfer_is_judged_like_a_refusal():
    obs, reward, done, info = refusing("", action='transfer_to_human("the member wants L2 renewed")')
    assert done and reward == 0.0 and not info["success"] and info["unexplained_refusals"] == 1
    assert "unresolved" in info["end_reason"]
    obs, reward, done, info = refusing("", action='transfer_to_human("L2 is past due: cannot renew it")')
    assert done and reward == 1.0 and info["success"]


def test_a_forbidden_request_must_name_its_reasons():
    from dataclasses import replace

    from agentgym_service.judge import Judge

    env = start(task_id=1)
    goal = env.task.goal
    bare = replace(goal, requests=(goal.requests[0], replace(goal.requests[1], reasons=())))
    with pytest.raises(ValueError, match="must name its reasons"):
        Judge(bare, env.lexicon)
    with pytest.raises(ValueError, match="must name its reasons"):
        Judge(replace(bare, requests=(goal.requests[0], replace(goal.requests[1], reasons=("late",)))), env.lexicon)
