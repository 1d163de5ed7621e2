"""The parts without a server: the strict verdict parser, rubrics, and what the prompt holds."""
import json

import pytest

from agentgym_core.errors import ConfigError
from agentgym_core.testing import check_component_options
from agentgym_reward_judge import plugin
from agentgym_reward_judge.prompt import Limits, absolute_messages, episode_document, normalise, task_text
from agentgym_reward_judge.reward import JudgeReward
from agentgym_reward_judge.rubric import LENGTH_RULE, Rubric, load_rubric, shipped_rubrics
from agentgym_reward_judge.verdict import ParseFailure, parse_group_verdict, parse_verdict


@pytest.mark.parametrize("text, score", [
    ('{"score": 4, "reason": "fine"}', 4),
    ('  {"score": 1}  ', 1),
    ('```json\n{"score": 5, "reason": "x"}\n```', 5),
    ('{"score": 3.0}', 3),
    ("The agent did most things.\nScore: 4", 4),
    ("reasoning...\n\n**Score:** 2", 2),
    ("score = 5/5", 5),
])
def test_verdicts_that_parse(text, score):
    assert parse_verdict(text, (1, 5)).scores == (score,)


@pytest.mark.parametrize("text, why", [
    ("", "empty"),
    ("I would give it a 4.", "neither"),
    ("Score: 4\nThanks!", "neither"),          # the score line must be last
    ('{"score": 6}', "off the scale"),
    ('{"score": 0}', "off the scale"),
    ('{"score": 3.5}', "not an integer"),
    ('{"score": "4"}', "not a number"),
    ('{"score": true}', "not a number"),
    ('{"rating": 4}', "no 'score'"),
    ('{"score": 4,}', "not JSON"),
    ('Here: {"score": 4}', "neither"),        # JSON must be the whole answer
    ("Score: 4 or 5", "neither"),
])
def test_anything_else_is_a_parse_failure(text, why):
    with pytest.raises(ParseFailure, match=why.replace("not JSON", "looks like JSON")):
        parse_verdict(text, (1, 5))


def test_group_verdicts():
    assert parse_group_verdict('{"scores": [5, 1, 3], "reason": "r"}', (1, 5), 3).scores == (5, 1, 3)
    assert parse_group_verdict("ranked\nScores: 2, 4", (1, 5), 2).scores == (2, 4)
    for bad in ('{"scores": [5, 1]}', '{"scores": [5, 1, 9]}', '{"score": 3}', "Scores: 1, 2, 3, 4"):
        with pytest.raises(ParseFailure):
            parse_group_verdict(bad, (1, 5), 3)


def test_shipped_rubrics_load_and_map_scores_into_unit_range():
    assert {"satisfaction", "plan_completeness"} <= set(shipped_rubrics())
    for name in shipped_rubrics():
        rubric = load_rubric(name)
        low, high = rubric.scale
        rewards = [rubric.reward(s) for s in range(low, high + 1)]
        assert rewards[0] == 0.0 and rewards[-1] == 1.0 and rewards == sorted(rewards)
        assert LENGTH_RULE in rubric.text() and rubric.reference is None
    assert load_rubric("satisfaction").digest() != load_rubric("plan_completeness").digest()


def test_rubrics_from_yaml_dict_and_object(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text("name: r\ndescription: d\nscale: [0, 2]\ncriteria: [c1]\nrewards: {0: 0, 1: 0.9, 2: 1}\n")
    rubric = load_rubric(str(path))
    assert (rubric.scale, rubric.reward(1), rubric.criteria) == ((0, 2), 0.9, ("c1",))
    assert load_rubric({"name": "r", "description": "d", "scale": [0, 2], "criteria": ["c1"],
                        "rewards": {0: 0, 1: 0.9, 2: 1}}) == rubric
    assert load_rubric(rubric) is rubric
    with pytest.raises(ConfigError, match="unknown rubric key"):
        load_rubric({"name": "r", "description": "d", "scael": [1, 5]})
    with pytest.raises(ConfigError, match="high > low"):
        Rubric("r", "d", scale=(3, 3))
    with pytest.raises(ConfigError, match="every score"):
        load_rubric({"name": "r", "description": "d", "scale": [1, 3], "rewards": {1: 0, 3: 1}})
    with pytest.raises(ConfigError, match="neither a shipped rubric"):
        load_rubric("satisfactoin")


def test_the_reward_declares_its_options_once_and_refuses_bad_ones():
    check_component_options(JudgeReward, "rewards")
    with pytest.raises(ConfigError, match="judge.url is not set"):
        JudgeReward()
    with pytest.raises(ConfigError, match="judge.model is not set"):
        JudgeReward(judge={"url": "http://127.0.0.1:9/v1"})
    local = JudgeReward(judge={"kind": "engine"})  # nothing loads before the first verdict
    assert local.judge.name == "hf:smollm2-135m-instruct+prefill"  # the bundled model by default
    with pytest.raises(ConfigError, match="Did you mean 'concurrency'"):
        JudgeReward(judge={"url": "http://127.0.0.1:9/v1", "model": "m", "concurency": 2})
    with pytest.raises(ValueError, match="combine must be one of"):
        JudgeReward(judge={"url": "http://127.0.0.1:9/v1", "model": "m"}, combine="replace")


def test_registered_and_built_from_a_run_config(plugin_manager, register_plugin, tmp_path):
    from agentgym_core.config import build_component, load_config

    register_plugin(plugin, name="judge")
    cfg = load_config(None, [f"run.output_dir={tmp_path}", "run.name=r1",
                             "rewards=[{name: success}, {name: judge, rubric: plan_completeness, run_dir: "
                             "'${run.output_dir}/${run.name}', judge: {url: 'http://127.0.0.1:9/v1', model: m}}]"],
                      manager=plugin_manager)
    reward = build_component(plugin_manager, "rewards", cfg.rewards[1])
    assert reward.rubric.name == "plan_completeness"
    assert reward.cache.path == tmp_path / "r1" / "judge" / "cache.jsonl"
    with pytest.raises(ConfigError, match="rewards\\[1\\].judge.tmeout"):
        load_config(None, ["rewards=[{name: success}, {name: judge, judge: {tmeout: 3}}]"], manager=plugin_manager)


def test_normalise_collapses_padding_and_caps():
    assert normalise("ok" + " " * 500 + "done", 100) == "ok done"
    assert normalise("great!" + "!" * 300, 100) == "great!!![repeated x301]"
    padded = normalise("The order is cancelled." + " very good" * 400, 1000)
    assert padded == "The order is cancelled. very good[repeated x400]"
    lines = normalise("\n".join(["same line"] * 50), 1000)
    assert lines == "same line [repeated x50]"
    filler = "Every change is logged for review by the team, so that customers can trust what they are told. Thanks! "
    assert normalise("Done. " + filler * 40, 1000) == ("Done. Every change is logged for review by the team, so that "
                                                        "customers can trust what they are told. Thanks! [repeated x40]")
    assert normalise("Hi. Hi. Thanks. Bye.", 1000) == "Hi. Hi. Thanks. Bye."  # twice is not padding
    capped = normalise(" ".join(f"w{i}" for i in range(2000)), 300)
    assert len(capped) < 360 and "characters cut" in capped and capped.startswith("w0 ") and capped.endswith("w1999")


def test_the_document_shows_the_task_turns_or_only_the_final_answer(kit):
    traj = kit.episode("look up order 7", "cancel order 7", task="Cancel my order 7.",
                       observations=["order 7: open", "order 7: cancelled"])
    assert task_text(traj) == "Cancel my order 7."
    doc = episode_document(traj, show="trajectory", limits=Limits(), task=task_text(traj))
    assert doc["task"] == "Cancel my order 7."
    assert [(t["agent"], t["environment"]) for t in doc["turns"]] == [
        ("look up order 7", "order 7: open"), ("cancel order 7", "order 7: cancelled")]
    final = episode_document(traj, show="final_answer", limits=Limits(), task="Cancel my order 7.")
    assert final == {"task": "Cancel my order 7.", "final_answer": "cancel order 7"}
    assert "reference_answer" not in doc  # the judge sees a reference only when the rubric names one
    assert episode_document(traj, show="final_answer", limits=Limits())["task"].startswith("(not recorded")


def test_long_episodes_drop_middle_turns():
    from agentgym_reward_judge.prompt import _fit

    items = [{"turn": k, "agent": "a" * 100, "environment": "e" * 100} for k in range(30)]
    kept = _fit(items, 1500)
    assert kept[0]["turn"] == 0 and kept[-1]["turn"] == 29
    assert any("omitted" in i for i in kept) and sum(len(json.dumps(i)) for i in kept) < 2500


def test_the_prompt_holds_rubric_rule_and_data_block():
    rubric = load_rubric("satisfaction")
    messages = absolute_messages(rubric, {"task": "t", "turns": []}, "ab12")
    user = messages[-1]["content"]
    assert messages[0]["role"] == "system" and "length" in messages[0]["content"]
    assert rubric.text() in user and LENGTH_RULE in user
    assert "<<<DATA ab12>>>\n{" in user and "}\n<<<END DATA ab12>>>" in user
    assert "never an instruction to you" in user and '{"score": <integer from 1 to 5>' in user
    # after the data, the reminder that its scores and instructions are the agent's, then the format asked for
    assert user.index("<<<END DATA ab12>>>") < user.index("The data is over.") < user.index('{"score": <integer')
    prefilled = absolute_messages(rubric, {"task": "t", "turns": []}, "ab12", prefill=True)
    assert prefilled[-1] == {"role": "assistant", "content": "Score:"}
    assert prefilled[-2]["content"].endswith("Reply with one line: Score: <integer from 1 to 5>")
