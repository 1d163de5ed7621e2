"""The model-played user, through a scripted engine: its lines are the model's, the guards are the kit's."""
from __future__ import annotations

import pytest

from agentgym_core.testing import ScriptedEngine
from agentgym_service import model_user
from agentgym_service.model_user import ModelUser, system_prompt
from library_env import LibraryEnv


@pytest.fixture(scope="module")
def tokenizer():
    pytest.importorskip("transformers")
    hf = pytest.importorskip("agentgym_hf.loading")
    return hf.load_tokenizer("smollm2-135m-instruct")


def play(tokenizer, lines, actions, task_id=0):
    engine = ScriptedEngine(tokenizer, lines)
    env = LibraryEnv(num_tasks=20, ood_tasks=4, user="model", user_model="scripted")
    env._engine = engine  # what build_engine would give: any engine plugin works the same
    first = env.reset(task_id=task_id)
    return env, engine, first, [env.step(a) for a in actions]


def test_lines_come_from_the_model_and_a_yes_authorizes_only_a_described_change(tokenizer):
    confirm = 'respond("I will renew Book 0 (L0). Do you confirm?")'
    lines = ["Hi, I want to renew a book.", "Card C1, loan L0.", "Yes, go ahead.", "Thanks!"]
    env, engine, first, steps = play(tokenizer, lines, ['respond("Card and loan?")', 'identify("C1")', 'get_loan("L0")',
                                                         confirm, 'renew_loan("L0")'])
    assert first == "Member: Hi, I want to renew a book." and steps[0][0] == "Member: Card C1, loan L0."
    assert not steps[-1][2]  # the renewal was authorized: the episode goes on
    prompt = tokenizer.decode(engine.prompts[0])
    assert "only when asked" in prompt and "My card is C1." in prompt


def test_a_yes_to_a_misdescribed_change_authorizes_nothing(tokenizer):
    lines = ["Hello.", "Card C1.", "Yes, sure."]
    env, _, _, steps = play(tokenizer, lines, ['respond("Card?")', 'identify("C1")',
                                               'respond("May I go ahead with L0?")', 'renew_loan("L0")'])
    obs, reward, done, info = steps[-1]
    assert done and reward == 0.0 and info["end_reason"] == "a change the user did not confirm"


def test_the_system_prompt_holds_what_the_user_knows_and_nothing_derived():
    env = LibraryEnv(num_tasks=20, ood_tasks=4)
    env.reset(task_id=1)
    prompt = system_prompt(env.task.goal, "Member")
    assert "Request 2" in prompt and "It's loan L2." in prompt and "You know only these details" in prompt
    due = env.task.goal.requests[0].outputs[0].value  # the answer the agent must work out
    assert f"{due}" not in prompt and "14 days" not in prompt
    assert callable(model_user.build_engine) and ModelUser


TOOLS_TEMPLATE = ("{% if tools %}<tools>{% for t in tools %}{{ t['function']['name'] }}:"
                  "{{ t['function']['parameters']['properties'] | list | join(',') }};{% endfor %}</tools>{% endif %}"
                  "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}")


def test_the_envs_tool_schemas_render_in_a_chat_template_that_takes_tools(tokenizer):
    """``GET /info``'s ``tools`` are the shape ``apply_chat_template(tools=...)`` takes; a template with tool
    support renders them, and a call the model writes in that shape is accepted as a JSON function call."""
    env = LibraryEnv(num_tasks=20, ood_tasks=4)
    text = tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], tools=env.describe()["tools"],
                                         chat_template=TOOLS_TEMPLATE, tokenize=False)
    assert "<tools>respond:message;identify:card;get_loan:loan_id;renew_loan:loan_id;" in text
    env.reset(task_id=0)
    env.step('respond("Your card, please?")')
    obs = env.step('<tool_call>{"name": "identify", "arguments": {"card": "C1"}}</tool_call>')[0]
    assert obs == "Member C1 identified."
