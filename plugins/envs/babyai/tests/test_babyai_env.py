"""BabyAIEnv: contract, task ids, text view, actions, and full episodes played to success."""
from __future__ import annotations

import pytest
from agentgym_env_babyai import plugin
from agentgym_env_babyai.env import BabyAIEnv
from agentgym_env_babyai.levels import ALL_LEVELS, EASY, resolve_levels
from agentgym_env_babyai.solvers import heuristic, oracle, play, random_agent

from agentgym_core.errors import ConfigError
from agentgym_core.testing import check_env


@pytest.fixture
def env():
    e = BabyAIEnv()
    yield e
    e.close()


def test_contract_default_and_easy():
    check_env(BabyAIEnv)
    check_env(BabyAIEnv, options={"levels": "easy"}, task_ids=(0, 7, 4999),
              actions=("look", "go to red ball", "noop", "turn left", "pick up", "drop", "toggle"))


def test_plugin_registers_import_string_only(plugin_manager, register_plugin):
    register_plugin(plugin, name="babyai-test")
    entry = plugin_manager.registry("envs").get("babyai")
    assert entry.target == "agentgym_env_babyai.env:BabyAIEnv"
    assert entry.load() is BabyAIEnv


def test_run_config_builds_the_env(plugin_manager, register_plugin):
    from agentgym_core.config import build_component, load_config

    register_plugin(plugin, name="babyai-test")
    for levels in ("easy", "[GoToObj,PickupLoc]"):
        cfg = load_config(None, ["env.name=babyai", f"env.levels={levels}", "env.test_seeds=7"], manager=plugin_manager)
        env = build_component(plugin_manager, "envs", cfg.env)
        assert isinstance(env, BabyAIEnv) and len(env.splits()["test"]) == 7 * len(env.levels)
        env.close()
    with pytest.raises(ConfigError, match="env.level"):
        load_config(None, ["env.name=babyai", "env.level=easy"], manager=plugin_manager)


def test_task_ids_interleave_levels_and_splits_are_disjoint():
    env = BabyAIEnv(levels=["GoToObj", "PickupLoc", "OpenDoor"], train_seeds=10, test_seeds=5)
    assert env.splits() == {"train": range(30), "test": range(30, 45)}
    assert [env.category(t) for t in range(4)] == ["GoToObj", "PickupLoc", "OpenDoor", "GoToObj"]
    first = env.reset(task_id=4)  # PickupLoc, seed 1
    assert "pick up" in first
    assert env.reset(task_id=4) == first
    info = env.describe()
    assert info["levels"] == ["GoToObj", "PickupLoc", "OpenDoor"]
    assert info["splits"] == {"train": 30, "test": 15}
    assert info["groups"]["easy"] == ["GoToObj", "PickupLoc"]
    with pytest.raises(ValueError, match="non-negative"):
        env.reset(task_id=-1)
    env.close()


def test_level_option_parsing_and_errors():
    assert resolve_levels("easy") == EASY
    assert resolve_levels("GoToObj, BabyAI-PickupLoc-v0") == ("GoToObj", "PickupLoc")
    assert resolve_levels("all") == ALL_LEVELS  # the one spelling of every level (the default)
    assert resolve_levels(["easy", "GoToObj"]) == EASY  # duplicates dropped
    with pytest.raises(ConfigError, match="Did you mean 'GoToRedBall'"):
        resolve_levels("GoToRedBal")
    with pytest.raises(ConfigError, match="reward"):
        BabyAIEnv(reward="dense")
    assert BabyAIEnv().levels == ALL_LEVELS == BabyAIEnv(levels="all").levels
    with pytest.raises(ConfigError, match=r"env.levels must be .*'all': every level.*got None"):
        BabyAIEnv(levels=None)
    with pytest.raises(ConfigError, match=r"unknown option 'level'\. Did you mean 'levels'\?.*Valid options: brief"):
        BabyAIEnv(level="easy")


def test_view_positions_match_the_grid(env):
    """Every listed object is where its egocentric offset points; walls are where announced."""
    fronts = 0
    for task_id in range(len(ALL_LEVELS)):
        env.reset(task_id=task_id)
        for _ in range(4):
            level = env.level
            (px, py), (fx, fy), (rx, ry) = level.agent_pos, level.dir_vec, level.right_vec
            for seen in env.view.objects:
                x, y = px + seen.forward * fx + seen.right * rx, py + seen.forward * fy + seen.right * ry
                assert (x, y) == seen.pos and level.grid.get(x, y) is seen.obj
                if (seen.forward, seen.right) == (1, 0):
                    assert level.grid.get(*level.front_pos) is seen.obj
                    fronts += 1
            for direction, (vx, vy) in (("forward", (fx, fy)), ("left", (-rx, -ry)), ("right", (rx, ry))):
                n = env.view.walls.get(direction)
                if n is not None:
                    assert level.grid.get(px + n * vx, py + n * vy).type == "wall"
            obs = env.step("turn left")[0]
            front = level.grid.get(*level.front_pos)
            assert ("right in front of you" in obs) == (front is not None and front.type != "wall")
    assert fronts > 0


@pytest.mark.parametrize("task_id", [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 15, 26])
def test_oracle_solves_levels(env, task_id):
    result = play(env, task_id, oracle, max_turns=1000)
    assert result["success"], (env.category(task_id), result)
    assert result["reward"] == 1.0
    assert result["invalid"] == 0


@pytest.mark.parametrize("task_id", range(0, 40, 5))
def test_high_level_actions_solve_easy_goto_in_few_turns(task_id):
    env = BabyAIEnv(levels="GoToRedBallGrey")
    result = play(env, 10_000 + task_id, heuristic, max_turns=8)
    assert result["success"], result
    assert result["turns"] <= 5


def test_go_to_and_pick_up_macros():
    env = BabyAIEnv(levels="PickupLoc")
    obs = env.reset(task_id=0)
    target = env.level.mission.split("pick up ")[1]  # e.g. "the grey key"
    obs, reward, done, info = env.step(f"Thought: it is in view.\nAction: go to {target}")
    assert not info["invalid_action"] and info["moves"] >= 1
    assert "right in front of you" in obs
    obs, reward, done, info = env.step("pick up")
    assert done and info["success"] and reward == 1.0
    assert "Mission complete" in obs


def test_put_next_to_and_drop():
    env = BabyAIEnv(levels="PutNextLocal")
    for task_id in range(30):  # a task whose two objects are both in view at the start
        env.reset(task_id=task_id)
        moving, fixed = env.level.mission.removeprefix("put the ").split(" next to the ")
        labels = [s.label for s in env.view.objects]
        if moving in labels and fixed in labels:
            break
    else:
        pytest.fail("no PutNextLocal task with both objects in view")
    obs, _, _, info = env.step(f"put next to {fixed}")
    assert info["action_failed"] and "not carrying anything" in obs
    obs, reward, done, info = env.step(f"pick up {moving}")
    assert f"You picked up the {moving}." in obs and f"You are carrying a {moving}." in obs
    if fixed not in [s.label for s in env.view.objects]:
        env.step("turn left")  # looked away while walking; one more look
    obs, reward, done, info = env.step(f"put the {moving} next to the {fixed}")
    assert done and info["success"] and reward == 1.0, obs
    assert f"You put the {moving} next to the {fixed}." in obs


def test_invalid_and_failed_actions(env):
    env.reset(task_id=0)
    obs, reward, done, info = env.step("dance wildly")
    assert info["invalid_action"] and not done and reward == 0.0
    assert "Invalid action 'dance wildly'" in obs and "Valid actions: go to <object>" in obs
    assert "Objects in view:" in obs and "red ball" in obs
    obs, _, _, info = env.step("go to purple unicorn")
    assert info["invalid_action"] and "is not an object" in obs
    obs, _, _, info = env.step("go to green box")
    assert info["invalid_action"] and "cannot see a green box" in obs
    obs, _, _, info = env.step("drop")
    assert info["action_failed"] and not info["invalid_action"] and "not carrying anything" in obs
    obs, _, _, info = env.step("check available actions")
    assert obs.startswith("Available actions: turn left, turn right, move forward") and "go to red ball" in obs
    assert info["moves"] == 0


def test_locked_door_needs_key():
    env = BabyAIEnv(levels="UnlockLocal")
    for task_id in range(20):
        env.reset(task_id=task_id)
        doors = [s for s in env.view.objects if s.obj.type == "door" and s.obj.is_locked]
        if doors:
            obs, _, done, info = env.step(f"open {doors[0].label}")
            assert info["action_failed"] and not done
            assert f"you need to carry a {doors[0].obj.color} key" in obs
            return
    pytest.fail("no locked door in view in 20 UnlockLocal tasks")


def test_episode_end_and_minigrid_reward():
    env = BabyAIEnv(levels="GoToRedBallGrey", reward="minigrid")
    env.reset(task_id=0)
    obs, reward, done, info = env.step("go to red ball")
    assert done and info["success"] and 0.1 <= reward < 1.0
    obs, reward, done, info = env.step("turn left")
    assert done and reward == 0.0 and "episode is over" in obs


def test_running_out_of_moves_ends_the_episode():
    env = BabyAIEnv(levels="GoTo")
    env.reset(task_id=0)
    env.level.max_steps = 3  # minigrid's move limit (576 on this level)
    assert not env.step("turn left")[2] and not env.step("turn left")[2]
    obs, reward, done, info = env.step("turn left")
    assert done and reward == 0.0 and not info["success"]
    assert "Out of moves: the mission was not completed within 3 moves." in obs


def test_sampling_rejected_stays_off_stdout(capfd):
    env = BabyAIEnv(levels="GoTo")
    env.reset(task_id=1)  # minigrid rejects a layout for this seed and would print it
    out, _ = capfd.readouterr()
    assert "Sampling rejected" not in out


def test_random_agent_runs_within_turn_cap(env):
    result = play(env, 10, random_agent(1), max_turns=15)
    assert result["turns"] <= 15


def test_lenient_parsing_finds_an_action_inside_a_sentence():
    env = BabyAIEnv(levels=["GoToRedBallGrey"])
    env.reset(task_id=0)
    obs, reward, done, info = env.step("I'm going to go to the red ball now.")
    assert info["embedded_action"] and not info["invalid_action"]
    assert done and reward == 1.0 and info["success"]
    # a whole-reply action is not marked embedded; a sentence without an action stays invalid
    env.reset(task_id=0)
    assert env.step("go to the red ball")[3]["embedded_action"] is False
    env.reset(task_id=0)
    _, _, done, info = env.step("I like red things.")
    assert info["invalid_action"] and not done and not info["embedded_action"]
    strict = BabyAIEnv(levels=["GoToRedBallGrey"], lenient=False)
    strict.reset(task_id=0)
    assert strict.step("I'm going to go to the red ball now.")[3]["invalid_action"]


def test_brief_instruction_is_short_and_names_the_actions():
    brief, full = BabyAIEnv(brief=True).instruction, BabyAIEnv().instruction
    assert len(brief) < len(full) / 3
    for action in ("go to <object>", "pick up <object>", "open <door>", "turn left", "move forward"):
        assert action in brief
