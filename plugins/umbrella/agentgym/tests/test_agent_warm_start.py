"""``LLMAgent.train(env, method, warm_start=...)``: the env's expert plays train tasks, sft on them, then the rl
run from the merged sft weights, as a ``stages:`` pipeline; afterwards the agent acts with the result."""
from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("agentgym_env_babyai")
pytest.importorskip("agentgym_trainer_sft")

from agentgym_hf.testing import tiny_model_dir  # noqa: E402

from agentgym_core import AgentGymError  # noqa: E402


def _pipeline(agent, warm_start, sft=None, **overrides):
    from agentgym_core import get_plugin_manager

    from agentgym.training import warm_start_config

    manager = get_plugin_manager()
    return warm_start_config(agent.train_config("babyai", "GRPO", max_steps=2, manager=manager, **overrides),
                             warm_start, sft, manager)


def test_warm_start_names_the_expert_the_data_or_what_went_wrong(tmp_path):
    from agentgym.agents import LLMAgent

    agent = LLMAgent(max_context=2048)
    cfg = _pipeline(agent, "expert")
    assert [s["name"] for s in cfg.stages] == ["sft", "rl"]
    sft = cfg.stages[0]["trainer"]
    # "expert" is the env's first registered expert; the stage is sized from the run (max_length = context).
    assert sft["name"] == "sft" and sft["demos_expert"] == "babyai.oracle" and sft["max_length"] == 2048
    assert sft["finetune"] == "lora" and sft["epochs"] == 2 and sft["demos_episodes"] == 64
    assert cfg.trainer.name == "rl" and cfg.trainer.algorithm == "grpo" and cfg.trainer.steps == 2
    cfg = _pipeline(agent, "heuristic", {"epochs": 1, "demos_episodes": 8}, **{"trainer.local_envs": "true"})
    sft = cfg.stages[0]["trainer"]
    assert (sft["demos_expert"], sft["epochs"], sft["demos_episodes"], sft["local_envs"]) == ("babyai.heuristic", 1, 8, True)
    demos = tmp_path / "demos.jsonl"
    demos.write_text("")
    sft = _pipeline(agent, str(demos)).stages[0]["trainer"]
    assert sft["data"] == str(demos) and "demos_expert" not in sft
    with pytest.raises(AgentGymError, match=r"unknown expert 'orcale' for env 'babyai'\. Did you mean 'oracle'\?.*"
                                            r"Experts of 'babyai': babyai\.oracle, babyai\.heuristic"):
        _pipeline(agent, "orcale")
    with pytest.raises(AgentGymError, match="sft= takes its options"):
        _pipeline(agent, "expert", {"name": "rl"})
    with pytest.raises(AgentGymError, match=r"stages\[0\] \(sft\).*epochz"):
        _pipeline(agent, "expert", {"epochz": 1})
    with pytest.raises(AgentGymError, match="pass warm_start='expert'"):
        agent.train("babyai", sft={"epochs": 1})


def test_scaling_inter_without_a_config_climbs_to_the_agents_horizon():
    """A service env's expert needs 10-22 actions: LLMAgent(max_turns=20) makes ScalingInter-RL's stages end at
    20 (the demonstrations are recorded at the final horizon), not at the 6 a first CPU run gets."""
    from agentgym.agents import LLMAgent

    cfg = LLMAgent(max_turns=20).train_config("babyai", "ScalingInter-RL", max_steps=9)
    assert dict(cfg.scheduler) == {"name": "scaling_inter", "rounds": [7, 13, 20], "step_interval": 3}
    assert list(LLMAgent(max_turns=2).train_config("babyai", "ScalingInter-RL").scheduler.rounds) == [1, 2]
    assert list(LLMAgent().train_config("babyai", "ScalingInter-RL").scheduler.rounds) == [2, 4, 6]


@pytest.mark.slow
def test_warm_start_trains_sft_then_rl_and_acts_with_the_result(tmp_path, capsys):
    from agentgym.agents import LLMAgent

    torch.set_num_threads(1)
    model = tiny_model_dir(tmp_path)
    agent = LLMAgent(base_model=str(model), dtype="fp32", max_new_tokens=8, max_turns=4, max_context=1024)
    runs = tmp_path / "runs"
    out = agent.train(
        "babyai", method="GRPO", max_steps=1, run_name="warm", warm_start="heuristic",
        sft={"demos_episodes": 4, "epochs": 1, "batch_size": 2, "lora_layers": 1, "lora_targets": ["q_proj", "v_proj"]},
        **{"run.output_dir": str(runs), "env.levels": "[GoToRedBallGrey]", "rollout.tasks_per_step": "1",
           "rollout.group_size": "2", "rollout.max_new_tokens": "8", "eval.tasks": "2", "trainer.finetune": "lora",
           "trainer.lora_targets": "[q_proj,v_proj]", "trainer.local_envs": "true", "trainer.progress": "false"})
    root = runs / "warm"
    state = json.loads((root / "pipeline.json").read_text())["stages"]
    assert [(s["name"], s["trainer"], s["status"]) for s in state] == [("sft", "sft", "completed"),
                                                                       ("rl", "rl", "completed")]
    demos = [json.loads(x) for x in (root / "sft" / "demos.jsonl").read_text().splitlines()]
    assert len(demos) == 4 and all(d["success"] and d["expert"] == "babyai.heuristic" and d["split"] == "train"
                                   for d in demos)
    # The rl stage started from the sft stage's merged weights; the agent now acts with the rl stage's.
    assert agent.trained_config.model.path == state[0]["next_model"] and agent.base_model == state[1]["checkpoint"]
    assert set(state[0]["eval"]) == {"before", "after"} and set(state[1]["eval"]) == {"after"}
    assert out["step"] == 1 and [s["name"] for s in out["stages"]] == ["sft", "rl"]
    printed = capsys.readouterr().out
    assert "stage      sft: completed" in printed and "held-out success before" in printed
    assert f"run: {root.resolve()}" in printed
    traj = agent.infer()  # the trained env, in the run's setup, with the rl stage's weights
    assert traj.max_turns == 4 and len(traj.turns) >= 1
    # The same run name again: refused, not overwritten.
    with pytest.raises(AgentGymError, match="already holds a pipeline run"):
        agent.train("babyai", method="GRPO", max_steps=1, run_name="warm", warm_start="heuristic",
                    **{"run.output_dir": str(runs)})
