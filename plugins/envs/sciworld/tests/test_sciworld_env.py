"""Tests of the ``sciworld`` env against the real ScienceWorld JAR (Java 17 required).

The JVM takes ~5 s to start, so the simulator tests share one module-scoped pair of envs
(they share one JVM); they are marked slow.
"""
from __future__ import annotations

import shutil

import pytest
from agentgym_env_sciworld import jvm
from agentgym_env_sciworld.env import SciWorldEnv
from agentgym_env_sciworld.tasks import TASKS, TOTAL, locate, task_id

from agentgym_core.testing import check_env, play_over_http

NO_JAVA = "ScienceWorld needs a Java 17 runtime (openjdk-17-jre-headless)"
needs_java = pytest.mark.skipif(shutil.which("java") is None, reason=NO_JAVA)

# Short gold paths (5-17 actions) from different topics.
SOLVABLE = [("find-non-living-thing", 151), ("lifespan-longest-lived", 93), ("power-component", 15)]
# Gold paths (variation 0) whose replay ScienceWorld repeats exactly: some tasks (e.g. inclined
# planes, circuits, Mendelian genetics) list objects or settle ties in hash order, so even two
# replays through ScienceWorld's own step can differ there. Includes a numbered-choice answer (grow-plant).
REPEATABLE = ["find-living-thing", "grow-plant", "chemistry-mix", "identify-life-stages-1", "lifespan-longest-lived"]


def test_task_ids_and_splits_need_no_jvm():
    env = SciWorldEnv()
    splits = env.splits()
    assert sum(len(ids) for ids in splits.values()) == TOTAL == 7207
    assert not set(splits["train"]) & set(splits["test"])
    assert not set(splits["dev"]) & set(splits["test"])
    for tid in (0, 29, 30, 1234, TOTAL - 1):
        task, variation = locate(tid)
        assert task_id(task.name, variation) == tid
        assert env.category(tid) == task.name
    assert locate(30) == (TASKS[1], 0)
    with pytest.raises(IndexError, match="out of range"):
        locate(TOTAL)
    only = SciWorldEnv(tasks=["boil", "melt"]).splits()
    assert only["train"] == list(range(14)) + list(range(30, 44))
    assert jvm.running() == 0  # describing the env started nothing
    env.close()


def test_unknown_task_name_is_a_config_error():
    from agentgym_core.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown ScienceWorld task.*boil"):
        SciWorldEnv(tasks=["boyl"])


def test_missing_java_is_reported_with_the_fix():
    env = SciWorldEnv(java="no-such-java-binary")
    with pytest.raises(jvm.JavaNotFoundError, match="openjdk-17-jre-headless"):
        env.reset(task_id=0)


def test_plugin_registers_sciworld(monkeypatch):
    monkeypatch.setenv("AGENTGYM_LOAD_PLUGINS", "sciworld")  # only this plugin's entry point
    from agentgym_core.plugins import get_plugin_manager

    manager = get_plugin_manager(fresh=True)
    entry = manager.registry("envs").get("sciworld")
    assert entry.load() is SciWorldEnv


@pytest.fixture(scope="module")
def envs():
    if shutil.which("java") is None:
        pytest.skip(NO_JAVA)
    env, gold = SciWorldEnv(), SciWorldEnv(gold_path=True)
    yield env, gold
    env.close()
    gold.close()
    assert jvm.running() == 0


@pytest.mark.slow
@needs_java
def test_task_table_matches_the_jar(envs):
    env, _ = envs
    sim = env._simulator().py  # the JAR's PythonInterface
    with env._jvm.lock:
        assert list(sim.getTaskNames()) == sorted(t.name for t in TASKS)
        assert [sim.getTaskMaxVariations(t.name) for t in TASKS] == [t.variations for t in TASKS]
        for t in (TASKS[0], TASKS[4], TASKS[15]):
            sim.load(t.name, 0, "", False)
            train, dev = list(sim.getVariationsTrain()), list(sim.getVariationsDev())
            assert (train, dev) == (list(range(t.train)), list(range(t.train, t.train + t.dev)))
    # sessions share one JVM, whose heap is capped
    assert jvm.running() == 1
    with open(f"/proc/{env._jvm.proc.pid}/cmdline", "rb") as f:
        assert b"-Xmx256m" in f.read().split(b"\0")


@pytest.mark.slow
@needs_java
def test_check_env(envs):
    check_env(SciWorldEnv, task_ids=(0, task_id("find-animal", 3)), actions=("look around", "inventory", "do a barrel roll"))


@pytest.mark.slow
@needs_java
@pytest.mark.parametrize("name,variation", SOLVABLE)
def test_gold_path_solves_the_task(envs, name, variation):
    other, gold = envs  # two sessions in one JVM: steps of the other must not disturb this one
    other.reset(task_id=task_id("boil", 3))
    tid = task_id(name, variation)
    first = gold.reset(task_id=tid)
    assert first.startswith("Your task is to") and "This room is called" in first
    actions = gold.gold_actions()
    assert actions, "the simulator gave no gold path"
    total, done, info = 0.0, False, {}
    for action in actions:  # gold paths may end with spare actions ("wait1") after success
        obs, reward, done, info = gold.step(action)
        assert not info.get("invalid_action"), (action, obs)
        other.step("open door to kitchen" if len(action) % 2 else "look around")
        total += reward
        if done:
            break
    assert done and info["success"] is True
    assert info["score"] == 100 and info["score_norm"] == 1.0
    assert total == pytest.approx(1.0)  # step rewards add up to the normalised score


@pytest.mark.slow
@needs_java
def test_fast_step_matches_scienceworlds_own_step(envs):
    """The default step (AgentInterface.step) gives what ScienceWorld's PythonInterface.step gives."""
    fast, gold = envs
    reference = SciWorldEnv(fast_step=False)
    try:
        for name in REPEATABLE:
            tid = task_id(name, 0)
            gold.reset(task_id=tid)
            actions = gold.gold_actions()
            replays = []
            for env in (reference, fast):  # one after the other: a load reseeds the simulator's randomness
                steps = [env.reset(task_id=tid)]
                for action in actions:
                    steps.append(env.step(action))
                    if steps[-1][2]:
                        break
                replays.append(steps)
            assert replays[0][0] == replays[1][0], name  # first observation
            for i, (ref, got) in enumerate(zip(replays[0][1:], replays[1][1:])):
                assert got == ref, (name, i, actions[i])  # observation, reward, done, info (score, moves)
            assert len(replays[0]) == len(replays[1])
            assert replays[1][-1][2] and replays[1][-1][3]["success"] is True, name
    finally:
        reference.close()


@pytest.mark.slow
@needs_java
def test_words_the_simulator_answers_itself(envs):
    env, _ = envs
    env.reset(task_id=task_id("boil", 0))
    obs, reward, done, info = env.step("task")
    assert obs.startswith("Task description:") and "boil" in obs
    assert info["moves"] == 0 and reward == 0.0 and not done
    obs, _, _, info = env.step("open door to kitchen")
    assert obs == "The door is now open." and info["moves"] == 1


@pytest.mark.slow
@needs_java
def test_bad_actions_hints_and_failure(envs):
    env, _ = envs
    env.reset(task_id=task_id("boil", 0))
    obs, reward, done, info = env.step("fly to the moon")
    assert info["invalid_action"] and not done and reward == 0.0
    assert "No known action" in obs and "valid actions" in obs
    obs, _, done, info = env.step("valid actions")
    assert info["hint"] and not done
    assert obs.startswith("Valid actions here") and "open door to kitchen" in obs
    assert info["score"] == 0
    _, _, _, info = env.step("look around")
    assert info["moves"] == 0  # neither the hint nor looking around took time
    obs, reward, done, info = env.step("focus on picture")  # the wrong object: the task fails
    assert done and info["success"] is False and info["score"] == -100 and reward == 0.0
    assert "failed" in obs
    obs, _, done, info = env.step("look around")
    assert done and info["invalid_action"] and "reset" in obs


@pytest.mark.slow
@needs_java
def test_step_limit_and_valid_actions_option(envs):
    env = SciWorldEnv(step_limit=2, valid_actions_in_info=True)
    try:
        env.reset(task_id=task_id("boil", 0))
        _, _, done, info = env.step("open door to kitchen")
        assert not done and "go to kitchen" in info["valid_actions"]
        _, _, done, info = env.step("go to kitchen")
        assert done and info["truncated"] and info["success"] is False
    finally:
        env.close()


@pytest.mark.slow
@needs_java
def test_plays_a_task_to_success_over_http(envs):
    _, gold = envs
    tid = task_id(*SOLVABLE[0])
    gold.reset(task_id=tid)
    run = play_over_http("sciworld", tid, gold.gold_actions(), invalid_action="xyzzy", invalid_hint="No known action")
    assert run.info["action_format"] == "react"
    assert run.first_observation.startswith("Your task is to")


@pytest.mark.slow
@needs_java
def test_a_java_object_freed_after_its_jvm_stopped_calls_nobody(caplog):
    """py4j frees a Java object when Python collects it, by a command to its JVM. Once the JVM is stopped
    that command would connect to a dead port and log the failure with a traceback, from inside whatever
    the garbage collector interrupted (in CI: pytest compiling a module, where CPython 3.11 then fails
    with "AST constructor recursion depth mismatch"). A stopped JVM's objects are freed silently."""
    import gc
    import logging

    env = SciWorldEnv(java_heap="200m")  # a JVM of its own (the module's envs share another)
    env.reset(task_id=0)
    held, own = env._simulator().py.getTaskNames(), env._jvm  # a Java object that outlives its session
    env.close()
    assert own.proc.poll() is not None  # its JVM has stopped
    with caplog.at_level(logging.DEBUG, logger="py4j"):
        del held
        gc.collect()
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert not any("connect" in r.getMessage() for r in caplog.records), caplog.records
