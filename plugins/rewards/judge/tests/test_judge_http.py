"""The judge reward against a real HTTP judge on loopback: verdicts, retries, limits, cache, gates, groups."""
import json
import socket
import subprocess
import sys
import textwrap

import pytest

from agentgym_core.assembly import RunParts
from agentgym_reward_judge import cache as cache_module
from agentgym_reward_judge import plugin
from agentgym_reward_judge.judges import JudgeError, JudgeUnavailable
from agentgym_reward_judge.reward import JudgeReward


def reward(server, kit, **options):
    judge = options.pop("judge", {})
    return JudgeReward(judge=kit.settings(server, **judge), **options)


def test_a_verdict_becomes_a_reward_on_the_last_turn(judge_server, kit):
    judge_server.reply = lambda prompt, body: {"score": 4, "reason": "mostly done"}
    r = reward(judge_server, kit)
    traj = kit.episode("look up order 7", "cancel order 7")
    assert r(traj) == [0.0, 0.75]                      # (4 - 1) / (5 - 1)
    info = traj.turns[-1].info["judge"]
    assert info == {"rubric": "satisfaction", "model": "openai:scripted", "mode": "absolute", "parsed": True,
                    "cached": False, "score": 4, "reward": 0.75, "reason": "mostly done",
                    "raw": '{"score": 4, "reason": "mostly done"}'}
    assert traj.to_dict()["turns"][-1]["info"]["judge"]["raw"] == info["raw"]  # the trajectory file carries it
    body = judge_server.requests[0]
    assert (body["model"], body["temperature"], body["seed"]) == ("scripted", 0.0, 0)  # greedy, fixed seed
    assert "Help the user cancel order 7." in body["messages"][-1]["content"]
    r.close()


def test_core_scores_with_it_next_to_success(judge_server, kit):
    from agentgym_core.defaults.components import SuccessReward

    judge_server.reply = lambda prompt, body: {"score": 5}
    parts = RunParts(pool=None, env=None, rewards=[(SuccessReward(), 1.0), (reward(judge_server, kit), 0.5)])
    passed, failed = kit.episode("a", "b", success=True), kit.episode("a", "c", success=False)
    parts.score([passed, failed])
    assert passed.rewards == [0.0, 1.5] and failed.rewards == [0.0, 0.0]
    assert len(judge_server.requests) == 1  # the failed episode was never shown to the judge


def test_the_state_check_stays_in_charge(judge_server, kit):
    judge_server.reply = lambda prompt, body: {"score": 5}
    auto, gate, alone = reward(judge_server, kit), reward(judge_server, kit, combine="gate"), \
        reward(judge_server, kit, combine="none")
    failed = kit.episode("I cancelled it, trust me", success=False)
    assert auto(failed) == [0.0] and failed.turns[-1].info["judge"]["gated"] is True
    assert gate(kit.episode("no state check reported")) == [0.0]   # gate: success unknown counts as not passed
    assert auto(kit.episode("no state check reported")) == [1.0]   # auto: nothing to gate on, the judge alone
    assert alone(kit.episode("x", success=False)) == [1.0]
    assert auto(kit.episode("x", success=True)) == [1.0]
    broken = kit.episode("x", success=True)
    broken.failed = True
    assert auto(broken) == [0.0] and auto(kit.episode()) == []
    assert auto.stats["gated"] == 1 and auto.stats["skipped"] == 1 and len(judge_server.requests) == 3


def test_parse_failures_are_counted_and_scored_as_configured(judge_server, kit):
    judge_server.reply = lambda prompt, body: "I'd say it went rather well overall."
    r = reward(judge_server, kit)
    traj = kit.episode("done")
    assert r(traj) == [0.0]
    info = traj.turns[-1].info["judge"]
    assert info["parsed"] is False and "neither" in info["error"] and info["raw"].startswith("I'd say")
    assert r.stats["parse_failures"] == 1
    lenient = reward(judge_server, kit, parse_failure_reward=0.25)
    assert lenient(kit.episode("other")) == [0.25] and lenient.stats["parse_failures"] == 1


def test_retries_on_5xx_and_429(judge_server, kit):
    judge_server.fail_next = 2
    r = reward(judge_server, kit)
    assert r(kit.episode("x")) == [0.5] and len(judge_server.requests) == 3
    judge_server.fail_next, judge_server.fail_status = 1, 429
    assert r(kit.episode("y")) == [0.5] and len(judge_server.requests) == 5


def test_retries_on_timeouts(judge_server, kit):
    judge_server.hang_next, judge_server.hang_seconds = 1, 3.0
    r = reward(judge_server, kit, judge={"timeout": 0.5})
    assert r(kit.episode("x")) == [0.5] and len(judge_server.requests) == 2


def test_an_endpoint_that_stays_down_is_an_error_not_a_zero(judge_server, kit):
    judge_server.fail_next = 100
    r = reward(judge_server, kit)
    with pytest.raises(JudgeUnavailable) as err:
        r(kit.episode("x"))
    message = str(err.value)
    assert f"{judge_server.url}/chat/completions" in message and "3 attempt(s)" in message and "HTTP 500" in message
    assert len(judge_server.requests) == 3
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    down = JudgeReward(judge={"url": f"http://127.0.0.1:{port}/v1", "model": "m", "attempts": 2, "backoff": 0.01})
    with pytest.raises(JudgeUnavailable, match=rf"127.0.0.1:{port}/v1/chat/completions did not answer: 2 attempt.*"
                                               r"ConnectError.*judge.url"):
        down(kit.episode("x"))


def test_a_failure_in_a_batch_keeps_the_verdicts_that_came(judge_server, kit, tmp_path):
    judge_server.fail_if = lambda prompt: "poison" in prompt
    r = reward(judge_server, kit, run_dir=str(tmp_path), judge={"attempts": 2})
    trajs = [kit.episode("fine 1", eid="a"), kit.episode("poison", eid="b"), kit.episode("fine 2", eid="c")]
    with pytest.raises(JudgeUnavailable, match="HTTP 500"):
        r.score_batch(trajs)
    assert len(judge_server.requests) == 4 and len(r.cache) == 2
    judge_server.fail_if = None
    assert [j.reward for j in reward(judge_server, kit, run_dir=str(tmp_path)).score_batch(trajs)] == [0.5] * 3
    assert len(judge_server.requests) == 5            # only the one that failed is asked again


def test_a_refused_request_names_the_key_variable_and_is_not_retried(judge_server, kit, monkeypatch):
    monkeypatch.setenv("MY_JUDGE_KEY", "s3cret")
    judge_server.fail_next, judge_server.fail_status = 1, 401
    r = reward(judge_server, kit, judge={"api_key_env": "MY_JUDGE_KEY"})
    with pytest.raises(JudgeError, match=r"HTTP 401.*\$MY_JUDGE_KEY"):
        r(kit.episode("x"))
    assert len(judge_server.requests) == 1


def test_a_step_is_judged_in_one_batch_within_the_concurrency_limit(judge_server, kit):
    judge_server.delay = 0.2
    r = reward(judge_server, kit, judge={"concurrency": 3})
    trajs = [kit.episode(f"order {k} is cancelled", eid=f"e{k}") for k in range(10)]
    results = r.score_batch(trajs)
    assert [j.reward for j in results] == [0.5] * 10 and len(judge_server.requests) == 10
    assert judge_server.max_active == 3   # in flight together, never more than the limit
    assert [r(t) for t in trajs] == [[0.5]] * 10 and len(judge_server.requests) == 10  # no second ask


def test_a_rerun_asks_nothing_twice(judge_server, kit, tmp_path):
    r = reward(judge_server, kit, run_dir=str(tmp_path))
    trajs = [kit.episode(f"order {k} is cancelled", eid=f"e{k}") for k in range(3)] + [kit.episode("order 0 is cancelled", eid="dup")]
    r.score_batch(trajs)
    assert len(judge_server.requests) == 3           # the same content is asked once, even in one batch
    again = [kit.episode(f"order {k} is cancelled", eid=f"e{k}") for k in range(3)]
    assert [r(t) for t in again] == [[0.5]] * 3 and len(judge_server.requests) == 3
    assert again[0].turns[-1].info["judge"]["cached"] is True and r.stats["cache_hits"] == 3
    lines = (tmp_path / "judge" / "cache.jsonl").read_text().splitlines()
    assert len(lines) == 3 and json.loads(lines[0])["raw"] == '{"score": 3, "reason": "scripted"}'
    other = reward(judge_server, kit, rubric="plan_completeness", run_dir=str(tmp_path))
    other(kit.episode("order 0 is cancelled"))
    assert len(judge_server.requests) == 4           # another rubric is another question


def test_the_cache_survives_a_resume_in_a_new_process(judge_server, kit, tmp_path):
    traj = kit.episode("cancel order 7", task="Please cancel order 7.")
    reward(judge_server, kit, run_dir=str(tmp_path))(traj)
    with open(tmp_path / "judge" / "cache.jsonl", "a") as f:
        f.write('{"key": "torn')                      # a crash mid-write leaves a torn line: skipped
    script = textwrap.dedent(f"""
        import json, sys
        from agentgym_core.rollout.trajectory import Trajectory
        from agentgym_reward_judge.reward import JudgeReward
        r = JudgeReward(judge={{"url": {judge_server.url!r}, "model": "scripted"}}, run_dir={str(tmp_path)!r})
        t = Trajectory.from_dict(json.loads(sys.stdin.read()))
        print(json.dumps([r(t), r.stats["requests"], t.turns[-1].info["judge"]["cached"]]))
    """)
    traj.turns[-1].info = {}
    out = subprocess.run([sys.executable, "-c", script], input=json.dumps(traj.to_dict()), capture_output=True,
                         text=True, timeout=120, check=True).stdout
    assert json.loads(out) == [[0.5], 0, True] and len(judge_server.requests) == 1


def test_the_cache_follows_the_training_run_directory(judge_server, kit, tmp_path):
    r = reward(judge_server, kit)                     # built before the run starts, as the trainer does
    run = str(tmp_path / "runs" / "a")
    plugin.on_run_start(run_dir=run, config=None, main=True)
    r(kit.episode("x"))
    assert (tmp_path / "runs" / "a" / "judge" / "cache.jsonl").is_file()
    plugin.on_run_end(run_dir=run, metrics={}, status="interrupted", main=True)
    assert cache_module.current_run_dir is None
    plugin.on_run_start(run_dir=run, config=None, main=True)  # resumed: same directory, asked once only
    reward(judge_server, kit)(kit.episode("x"))
    assert len(judge_server.requests) == 1


def test_group_relative_judging_ranks_a_group_in_one_call(judge_server, kit):
    def rank(prompt, body):
        blocks = kit.data_blocks(prompt)
        return {"scores": [5 if "solved" in b else 1 for b in blocks], "reason": "compared"}

    judge_server.reply = rank
    r = reward(judge_server, kit, mode="group")
    group0 = [kit.episode("tried", eid="a", group=0), kit.episode("solved it", eid="b", group=0),
              kit.episode("gave up", eid="c", group=0)]
    group1 = [kit.episode("solved too", eid="d", group=1), kit.episode("nothing", eid="e", group=1)]
    results = r.score_batch(group0 + group1)
    assert [j.reward for j in results] == [0.0, 1.0, 0.0, 1.0, 0.0]
    # the two groups are judged concurrently: their requests may arrive in either order
    assert len(judge_server.requests) == 2 and any("3 episodes of the same task" in p for p in judge_server.prompts())
    assert group0[1].turns[-1].info["judge"]["mode"] == "group"
    assert [r(t) for t in group0] == [[0.0], [1.0], [0.0]] and len(judge_server.requests) == 2
    r.score_batch(group0)
    assert len(judge_server.requests) == 2            # the group's verdict is cached too
    judge_server.reply = lambda prompt, body: {"scores": [5]}  # one score for a group of two: a parse failure
    bad = r.score_batch([kit.episode("p", eid="p", group=7), kit.episode("q", eid="q", group=7)])
    assert [j.reward for j in bad] == [0.0, 0.0] and r.stats["parse_failures"] == 1


def test_group_mode_one_episode_at_a_time_judges_alone_with_a_warning(judge_server, kit):
    r = reward(judge_server, kit, mode="group")
    with pytest.warns(UserWarning, match="score_batch"):
        assert r(kit.episode("x")) == [0.5]
    assert "Score the episode" in judge_server.prompts()[0]


def test_the_trainers_scoring_hands_the_step_to_score_batch(judge_server, kit):
    """RunParts.score (what the rl trainer and the scaffold trainer call on a step's episodes) gives a reward
    with score_batch every episode first: group mode ranks each group in one call, with no warning."""
    import warnings

    def rank(prompt, body):
        return {"scores": [5 if "solved" in b else 1 for b in kit.data_blocks(prompt)]}

    judge_server.reply = rank
    parts = RunParts(pool=None, env=None, rewards=[(reward(judge_server, kit, mode="group"), 1.0)])
    step = [kit.episode("tried", eid="a", group=0), kit.episode("solved it", eid="b", group=0),
            kit.episode("solved too", eid="c", group=1), kit.episode("nothing", eid="d", group=1)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the one-at-a-time warning would fail the test
        parts.score(step)
    assert [t.rewards for t in step] == [[0.0], [1.0], [1.0], [0.0]]
    assert len(judge_server.requests) == 2 and all("2 episodes of the same task" in p for p in judge_server.prompts())
