"""TextCraftEnv: contract, reproducible goals and splits, crafting rules, planner to success."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from agentgym_env_textcraft import plugin
from agentgym_env_textcraft.catalog import _tree, item_id, load_catalog, recipes_dir
from agentgym_env_textcraft.env import TextCraftEnv
from agentgym_env_textcraft.solvers import plan, planner, play, random_agent

from agentgym_core.errors import ConfigError
from agentgym_core.testing import check_env


@pytest.fixture(scope="module")
def env():
    e = TextCraftEnv()
    yield e
    e.close()


def test_contract():
    check_env(TextCraftEnv, actions=("inventory", "get 1 oak log", "noop", "craft 1 nothing using 1 air"))


def test_plugin_registers_textcraft(plugin_manager, register_plugin):
    register_plugin(plugin, name="textcraft-test")
    entry = plugin_manager.registry("envs").get("textcraft")
    assert entry.load() is TextCraftEnv


def test_recipes_ship_inside_the_package():
    assert os.path.isfile(os.path.join(recipes_dir(), "recipes", "acacia_boat.json"))


def test_splits_hold_out_whole_goals(env):
    splits = env.splits()
    assert splits["train"].start == 0 and splits["train"].stop == splits["test"].start
    train_goals = {env.goal_of(t) for t in splits["train"]}
    test_goals = {env.goal_of(t) for t in splits["test"]}
    assert len(train_goals) == len(splits["train"]) and len(test_goals) == len(splits["test"])
    assert not train_goals & test_goals
    assert {env.category(t) for t in splits["test"]} == {"depth2", "depth3", "depth4"}
    assert env.goal_of(len(env.catalog.goals)) == env.goal_of(0)  # ids wrap around
    assert env.describe()["splits"] == {"train": len(splits["train"]), "test": len(splits["test"])}
    with pytest.raises(ValueError, match="non-negative"):
        env.reset(task_id=-3)


def test_depth_one_goals_and_bad_options():
    easy = TextCraftEnv(min_depth=1)
    assert len(easy.catalog.goals) > len(load_catalog(2).goals)
    assert "depth1" in {easy.category(t) for t in easy.splits()["train"]}
    with pytest.raises(ConfigError, match="min_depth"):
        TextCraftEnv(min_depth=0)


def test_reset_is_reproducible_across_processes(env):
    """Goal and the shown commands depend only on the task id (not on hash seeds)."""
    code = ("from agentgym_env_textcraft.env import TextCraftEnv; import sys; "
            "sys.stdout.write(TextCraftEnv().reset(task_id=123))")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PYTHONHASHSEED": "4321"}, check=True).stdout
    env.reset(task_id=5)
    assert env.reset(task_id=123) == other
    assert other.startswith("Crafting commands:\ncraft ") and "\n\nGoal: craft " in other


def test_resets_leave_the_recipe_tree_untouched(env):
    tree = _tree()
    before = sum(len(v) for v in tree.itemid_recipes.values())
    for task_id in range(0, 400, 7):
        env.reset(task_id=task_id)
    assert sum(len(v) for v in tree.itemid_recipes.values()) == before


@pytest.mark.parametrize("task_id", [0, 1, 50, 200, 335, 336, 350, 400, 418])
def test_planner_crafts_the_goal(env, task_id):
    result = play(env, task_id, planner, max_turns=500)
    assert result["success"] and result["reward"] == 1.0, (env.goal, result)
    assert result["invalid"] == 0 and result["failed"] == 0


def test_crafting_rules_and_helpful_failures(env):
    env.reset(task_id=0)
    obs, reward, done, info = env.step("inventory")
    assert obs == "Inventory: You are not carrying anything." and not info["action_failed"]
    obs, _, _, info = env.step("get 2 planks")
    assert info["action_failed"] and "type of ingredient" in obs and "such as acacia planks" in obs  # shown kinds first
    obs, _, _, info = env.step("get 1 stick")
    assert info["action_failed"] and "craft it instead" in obs
    obs, _, _, info = env.step("Thought: I need logs.\nAction: get 1 oak log")
    assert obs == "Got 1 oak log" and not info["action_failed"]
    obs, _, _, info = env.step("craft 4 oak planks using 2 oak log")
    assert info["action_failed"] and "missing 2 oak log" in obs and "[oak log] (1)" in obs
    obs, _, _, info = env.step("craft 4 oak planks using 1 oak log")  # the recipe says "oak logs"
    assert obs == "Crafted 4 oak planks" and not info["action_failed"]
    obs, _, _, info = env.step("craft 4 stick using 2 oak planks")  # "planks" is a type: oak planks fit
    assert obs == "Crafted 4 stick"
    obs, _, _, info = env.step("craft 4 stick using 3 oak planks")
    assert info["action_failed"] and "missing 3 oak planks" in obs  # 2 of the 4 were used
    obs, _, _, info = env.step("craft 1 stick using 1 oak planks")
    assert info["action_failed"] and "use the ingredients and counts" in obs
    obs, _, _, info = env.step("craft 1 dragon using 1 stick")
    assert info["action_failed"] and "no crafting command makes it" in obs
    obs, _, _, info = env.step("craft 1 oak button using stick")
    assert info["action_failed"] and "'<count> <item>'" in obs
    obs, _, _, info = env.step("craft 1 oak button using 1 stick")
    assert info["action_failed"] and "use the ingredients and counts" in obs
    obs, reward, done, info = env.step("dance")
    assert info["invalid_action"] and not done and reward == 0.0
    assert obs.startswith("Invalid action 'dance'. Valid actions: get <count> <item>, craft")
    assert "[stick] (4)" in env.step("inventory")[0]


def test_a_free_reply_is_read_from_its_first_command_line(env):
    """Small models copy the observation's header before the command (agent.action_format: free sends it all)."""
    env.reset(task_id=0)
    obs, _, _, info = env.step("Crafting commands:\nget 1 oak log\ncraft 4 oak planks using 1 oak log")
    assert obs == "Got 1 oak log" and not info["invalid_action"]
    obs, _, _, info = env.step("I should craft now.\n`craft 4 oak planks using 1 oak log`.")
    assert obs == "Crafted 4 oak planks"
    obs, _, _, info = env.step("Thought: craft 4 stick using 2 oak planks\nAction: inventory")  # Action: wins
    assert obs.startswith("Inventory:")
    obs, _, _, info = env.step("Crafting commands:\nnothing to do")
    assert info["invalid_action"] and obs.startswith("Invalid action 'Crafting commands:")


def test_episode_ends_on_the_goal(env):
    env.reset(task_id=42)
    actions = plan(env.catalog, env.goal)
    for action in actions[:-1]:
        _, reward, done, _ = env.step(action)
        assert not done and reward == 0.0
    _obs, reward, done, info = env.step(actions[-1])
    assert done and reward == 1.0 and info["success"]
    assert env.step("inventory") == ("The episode is over; reset to start a new task.", 0.0, True,
                                     {**info, "invalid_action": True})


def test_random_agent_is_far_from_the_planner(env):
    results = [play(env, t, random_agent(t), max_turns=30) for t in range(336, 346)]
    assert all(r["turns"] <= 30 for r in results)


def test_item_ids():
    assert item_id(" Dark  Oak Planks ") == "minecraft:dark_oak_planks"
