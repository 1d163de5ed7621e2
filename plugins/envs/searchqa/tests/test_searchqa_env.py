"""Tests of the ``searchqa`` env: real BM25 (bm25s) over the real default corpus and a user corpus."""
from __future__ import annotations

import json

import pytest
from agentgym_core.errors import ConfigError
from agentgym_core.testing import check_env, play_over_http

from agentgym_env_searchqa.corpus import Retriever, file_digest, load_jsonl_corpus
from agentgym_env_searchqa.env import SearchQAEnv
from agentgym_env_searchqa.metrics import exact_match, f1_score, normalize
from agentgym_env_searchqa.solver import solve


@pytest.fixture(scope="module")
def env():
    """The default env (wiki-offline corpus, generated questions); index cached after the first run."""
    instance = SearchQAEnv()
    yield instance
    instance.close()


def test_metrics():
    assert normalize("The  Eiffel-Tower!") == "eiffel tower"
    assert exact_match("the eiffel tower", ["Eiffel Tower"]) == 1.0
    assert exact_match("Izmir", ["İzmir"]) == 1.0
    assert exact_match("Paris, France", ["Paris"]) == 0.0
    assert f1_score("Paris, France", ["Paris"]) == pytest.approx(2 / 3)
    assert f1_score("London", ["Paris"]) == 0.0


def test_splits_are_fixed_and_disjoint_by_answer(env):
    splits = env.splits()
    assert len(splits["train"]) > 4000 and len(splits["test"]) > 400
    train_answers = {env.question(i)["golden_answers"][0] for i in splits["train"]}
    test_answers = {env.question(i)["golden_answers"][0] for i in splits["test"]}
    assert not {a for a in train_answers & test_answers if not a.isdigit()}  # years may repeat
    assert {env.category(i) for i in splits["test"]} == {"lookup", "bridge", "bridge_year"}
    assert SearchQAEnv().question(7) == env.question(7)  # same ids in a new env


def test_check_env(env):
    check_env(SearchQAEnv, task_ids=(0, env.splits()["test"][0]),
              actions=("<search>capital of France</search>", "no tags here", "<answer>Paris</answer>"))


def test_search_answer_and_bad_actions(env):
    question = env.reset(task_id=0)
    assert question.startswith("Question: ")
    obs, reward, done, info = env.step("I think I should look this up")
    assert info["invalid_action"] and not done and "<search>" in obs and "<answer>" in obs
    obs, _, done, _ = env.step("<search></search>")
    assert "Invalid action" in obs and not done
    obs, reward, done, info = env.step("<think>France's capital?</think>\n<search> Eiffel Tower Paris </search>")
    assert obs.startswith("<information>") and obs.endswith("</information>")
    assert obs.count("Doc ") == 3 and 'Title: "Eiffel Tower"' in obs and reward == 0.0 and not done
    assert info["searches"] == 1
    obs, _, _, _ = env.step("<search>zzzqqq xxyyzz</search>")
    assert "No passage matches" in obs
    obs, reward, done, info = env.step("<answer>definitely wrong</answer>")
    assert done and reward == 0.0 and info["success"] is False and info["em"] == 0.0
    obs, _, done, info = env.step("<answer>again</answer>")
    assert done and info["invalid_action"]


@pytest.mark.parametrize("kind", ["lookup", "bridge", "bridge_year"])
def test_scripted_searcher_answers_test_questions(env, kind):
    ids = [i for i in env.splits()["test"] if env.category(i) == kind][:12]
    solved = 0
    for tid in ids:
        env.reset(task_id=tid)
        actions, (obs, reward, done, info) = solve(env, env.question(tid))
        assert done and len(actions) >= 2
        solved += info["success"]
        assert reward == info["em"]
    assert solved >= 8, f"the scripted searcher solved only {solved}/12 {kind} questions"


def test_user_corpus_and_qa_file(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    rows = [{"id": "a", "title": "Zorblat", "text": "Zorblat is a purple moon orbiting Quixar."},
            {"id": "b", "title": "Quixar", "text": "Quixar is a gas giant discovered by Mira Tellen."},
            {"id": "c", "title": "Mira Tellen", "text": "Mira Tellen was an astronomer born in Vell."}]
    corpus.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    qa = tmp_path / "qa.jsonl"
    qa.write_text(json.dumps({"question": "Where was the discoverer of Zorblat's planet born?",
                              "golden_answers": ["Vell"]}) + "\n"
                  + json.dumps({"question": "What colour is Zorblat?", "golden_answers": "purple", "split": "test"}) + "\n")
    cache = tmp_path / "cache"
    env = SearchQAEnv(corpus=str(corpus), qa_file=str(qa), cache_dir=str(cache), top_k=2, reward="f1")
    assert env.splits() == {"train": range(0, 1), "test": range(1, 2)}
    env.reset(task_id=0)
    obs, _, _, _ = env.step("<search>Quixar discovered</search>")
    assert 'Title: "Quixar"' in obs.split("\n")[0] and "Mira Tellen" in obs
    obs, reward, done, info = env.step("<answer>in Vell</answer>")
    assert done and info["em"] == 0.0 and reward == info["f1"] == pytest.approx(2 / 3)
    # the index is cached on disk and reused
    assert env.data.retriever.built and any(cache.iterdir())
    records = load_jsonl_corpus(corpus)
    assert Retriever(records, "another digest", str(cache)).built  # a different corpus builds anew ...
    same = Retriever(records, f"jsonl:{file_digest(corpus)}", str(cache))
    assert not same.built  # ... the same corpus loads the cached index
    assert same.search("gas giant", 1)[0][0]["title"] == "Quixar"


def test_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="reward"):
        SearchQAEnv(reward="bleu")
    with pytest.raises(ConfigError, match="qa_file"):
        corpus = tmp_path / "c.jsonl"
        corpus.write_text('{"title": "A", "text": "b"}\n')
        SearchQAEnv(corpus=str(corpus), cache_dir=str(tmp_path))
    from agentgym_env_searchqa.corpus import CorpusError
    with pytest.raises(CorpusError, match="does not exist"):
        SearchQAEnv(corpus=str(tmp_path / "missing.jsonl"), qa_file="x")


def test_plugin_registers_searchqa(monkeypatch):
    monkeypatch.setenv("AGENTGYM_LOAD_PLUGINS", "searchqa")  # only this plugin's entry point
    from agentgym_core.plugins import get_plugin_manager

    assert get_plugin_manager(fresh=True).registry("envs").get("searchqa").load() is SearchQAEnv


@pytest.mark.slow
def test_plays_a_question_to_success_over_http(env):
    tid = next(i for i in env.splits()["test"] if env.category(i) == "bridge")
    env.reset(task_id=tid)
    actions, (_, _, _, info) = solve(env, env.question(tid))
    assert info["success"]
    play = play_over_http("searchqa", tid, actions, invalid_action="just text", invalid_hint="Invalid action")
    assert play.info["action_format"] == "tags"
    assert play.first_observation == f"Question: {env.question(tid)['question']}"
    assert play.last["reward"] == 1.0
