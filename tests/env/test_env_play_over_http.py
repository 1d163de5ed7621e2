"""agentgym_core.testing.play_over_http against a real server: a won episode, and each way it reports a broken one."""
from __future__ import annotations

import pytest

from agentgym_core.env.host import ServerThread, build_env_server
from agentgym_core.testing import play_over_http

TOY = "agentgym_env_toys:CounterEnv"


def test_plays_a_list_or_a_policy_to_success():
    with ServerThread(build_env_server(TOY)) as srv:
        play = play_over_http(srv.url, 2, ["inc", "inc", "inc"], invalid_action="jump", invalid_hint="use inc or dec")
        assert play.first_observation == "value 0, target 3" and play.success
        assert [a for a, _ in play.steps] == ["inc"] * 3 and play.last["score"] == 1.0
        assert play.invalid["observation"] == "unknown action 'jump'; use inc or dec"
        policy = play_over_http(srv.url, 1, lambda obs: "inc", max_steps=10)  # stops at done, not at max_steps
        assert len(policy.steps) == 2 and policy.info["splits"]["train"] == 100


def test_reports_a_lost_episode_and_an_unhelpful_invalid_answer():
    with ServerThread(build_env_server(TOY)) as srv:
        with pytest.raises(AssertionError, match="did not end in success after 2 steps"):
            play_over_http(srv.url, 2, ["inc", "dec"])
        assert not play_over_http(srv.url, 2, ["dec"], expect_success=False).success
        with pytest.raises(AssertionError, match="should say 'try again'"):
            play_over_http(srv.url, 0, ["inc"], invalid_action="jump", invalid_hint="try again")
        with pytest.raises(AssertionError, match="should be answered with info.invalid_action"):
            play_over_http(srv.url, 2, ["inc"], invalid_action="inc")
        with pytest.raises(AssertionError, match="POST /reset .* answered 422"):
            play_over_http(srv.url, -1, ["inc"])
        assert srv.env_server.sessions == {}  # every finished play closed its session


def test_launches_a_named_env():
    play = play_over_http(TOY, 0, ["inc"], options={"start": 0})
    assert play.url.startswith("http://127.0.0.1:") and play.success
