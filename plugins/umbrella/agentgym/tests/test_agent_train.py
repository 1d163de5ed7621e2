"""``LLMAgent(...).train(...)`` runs the same trainer; a LoRA checkpoint loads with plain transformers + peft."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("agentgym_env_babyai")

from agentgym_hf.testing import tiny_model_dir  # noqa: E402


@pytest.mark.slow
def test_llmagent_train_with_lora_writes_loadable_adapters(tmp_path, monkeypatch):
    from agentgym.agents import LLMAgent

    torch.set_num_threads(1)
    model = tiny_model_dir(tmp_path)
    agent = LLMAgent(base_model=str(model), dtype="fp32", max_new_tokens=8, max_turns=2, max_context=1024)
    metrics = agent.train(
        "babyai", method="ScalingInter-RL", max_steps=2, run_name="api",
        **{"run.output_dir": str(tmp_path / "runs"), "env.levels": "[GoToRedBallGrey]", "scheduler.rounds": "[1,2]",
           "scheduler.step_interval": "1", "rollout.tasks_per_step": "2", "rollout.group_size": "2",
           "rollout.max_new_tokens": "8", "eval.before": "false", "eval.after": "false", "trainer.finetune": "lora",
           "trainer.lora_targets": "[q_proj,v_proj]", "trainer.local_envs": "true", "trainer.progress": "false",
           "trainer.kl_coef": "0.05"},
    )
    assert metrics["step"] == 2 and metrics["horizon"] == 2
    run = tmp_path / "runs" / "api"
    assert [json.loads(x)["horizon"] for x in (run / "metrics.jsonl").read_text().splitlines()] == [1, 2]
    ckpt = run / "checkpoints" / "step_000002"
    assert (ckpt / "adapter_config.json").exists() and (ckpt / "trainer_state.pt").exists()
    assert agent.base_model == str(ckpt)

    from transformers import AutoModelForCausalLM

    lm = AutoModelForCausalLM.from_pretrained(str(ckpt))  # transformers' peft integration reads adapter_config
    assert any("lora" in n for n, _ in lm.named_parameters())
    with torch.no_grad():
        assert torch.isfinite(lm(input_ids=torch.tensor([[1, 2, 3]])).logits).all()


QUICKSTART = Path(__file__).resolve().parents[4] / "configs" / "quickstart.yaml"


def test_train_config_with_an_algorithm_method_replaces_the_files_scheduler():
    from agentgym.agents import LLMAgent

    cfg = LLMAgent().train_config("babyai", method="GRPO", max_steps=1, config=str(QUICKSTART))
    # The quickstart's scaling_inter rounds [1, 2] become a fixed horizon at its final stage (2 turns).
    assert dict(cfg.scheduler) == {"name": "fixed", "turns": 2}
    assert cfg.trainer.algorithm == "grpo" and cfg.trainer.steps == 1
    cfg = LLMAgent(max_turns=5).train_config("babyai", method="PPO", config=str(QUICKSTART))
    assert dict(cfg.scheduler) == {"name": "fixed", "turns": 5} and cfg.trainer.algorithm == "ppo"


def test_train_config_file_values_win_over_llmagent_defaults():
    from agentgym.agents import LLMAgent

    cfg = LLMAgent().train_config("babyai", method="ScalingInter-RL", max_steps=30, config=str(QUICKSTART))
    assert cfg.run.name == "quickstart" and cfg.model.max_context == 1024 and cfg.model.dtype == "fp32"
    assert dict(cfg.scheduler) == {"name": "scaling_inter", "rounds": [1, 2], "step_interval": 8}
    assert cfg.trainer.steps == 30 and list(cfg.env.levels) == ["GoToLocal"]
    # What the caller passes explicitly wins over the file; overrides win over everything.
    cfg = LLMAgent(max_context=2048, dtype="fp32").train_config(
        "babyai", config=str(QUICKSTART), run_name="mine", **{"trainer.lr": 1e-5, "env.levels": "[GoToObj]"})
    assert (cfg.model.max_context, cfg.model.dtype, cfg.run.name) == (2048, "fp32", "mine")
    assert cfg.trainer.lr == 1e-5 and list(cfg.env.levels) == ["GoToObj"] and cfg.trainer.steps == 16
    # The engine, its options and the seed given to the agent are the run's too.
    cfg = LLMAgent(engine="hf", seed=7, max_batch_size=4).train_config("babyai", config=str(QUICKSTART))
    assert (cfg.engine.name, cfg.engine.max_batch_size, cfg.run.seed) == ("hf", 4, 7)
    assert LLMAgent().train_config("babyai", config=str(QUICKSTART)).engine.max_batch_size == 16  # the file's
    # Without a file: the agent's defaults.
    cfg = LLMAgent().train_config("babyai")
    assert (cfg.run.name, cfg.model.max_context, cfg.trainer.steps, cfg.scheduler.name) == ("agent", 4096, 100, "scaling_inter")
    # ... sized for a first result in minutes on a CPU: every ScalingInter stage within the run, 8 episodes
    # a step, an 8-task evaluation at the last stage's 6 turns; a method with a fixed horizon: 6 turns.
    assert (list(cfg.scheduler.rounds), cfg.scheduler.step_interval) == ([2, 4, 6], 33)
    assert cfg.trainer.finetune == "lora" and cfg.trainer.lr == 1e-4  # LoRA's rate, not the trainer's 1e-5
    assert (cfg.rollout.tasks_per_step * cfg.rollout.group_size, cfg.rollout.max_new_tokens, cfg.eval.tasks) == (8, 48, 8)
    assert LLMAgent().train_config("babyai", method="ScalingInter-RL", max_steps=9).scheduler.step_interval == 3
    # Four steps, three stages: the last stage is trained too (stages at steps 1, 2 and 3-4, not 1-2, 3-4).
    assert LLMAgent().train_config("babyai", method="ScalingInter-RL", max_steps=4).scheduler.step_interval == 1
    assert LLMAgent().train_config("babyai", **{"trainer.finetune": "full"}).trainer.lr == 1e-5  # the trainer's
    assert LLMAgent().train_config("babyai", **{"trainer.lr": 3e-4}).trainer.lr == 3e-4
    assert LLMAgent().train_config("babyai", config=str(QUICKSTART)).trainer.lr == 1e-3  # the file's
    assert dict(LLMAgent().train_config("babyai", method="GRPO").scheduler) == {"name": "fixed", "turns": 6}
    assert dict(LLMAgent(max_turns=9).train_config("babyai", method="GRPO").scheduler) == {"name": "fixed", "turns": 9}
    assert LLMAgent().train_config("babyai", **{"scheduler.rounds": [6, 13, 20]}).scheduler.rounds == [6, 13, 20]


def test_every_registered_estimator_is_a_method():
    """``method=`` takes each estimator the rl trainer registers, by any of its spellings."""
    from agentgym.agents import LLMAgent
    from agentgym.training import method_key
    from agentgym_core.errors import AgentGymError
    from agentgym_trainer_rl.registry import ESTIMATORS

    for e in ESTIMATORS:
        for spelling in (*e.names, *e.methods):
            cfg = LLMAgent().train_config("babyai", method=spelling, config=str(QUICKSTART))
            assert cfg.trainer.algorithm == e.name, spelling
    with pytest.raises(AgentGymError, match="use ScalingInter-RL, PPO, GRPO, Dr-GRPO, RLOO, REINFORCE.. or "
                                            "REINFORCE..-baseline. Did you mean 'rloo'"):
        method_key("RLO")


def test_train_keyword_that_is_not_a_dotted_key_is_explained():
    from agentgym.agents import LLMAgent
    from agentgym_core.errors import AgentGymError

    with pytest.raises(AgentGymError, match=r"\*\*\{'trainer.lr': 1e-5\}"):
        LLMAgent().train_config("babyai", lr=1e-5)


@pytest.mark.slow
def test_infer_after_train_plays_the_trained_setup(tmp_path):
    from agentgym_env_babyai.env import BRIEF_INSTRUCTION

    from agentgym.agents import LLMAgent

    torch.set_num_threads(1)
    model = tiny_model_dir(tmp_path)
    agent = LLMAgent(base_model=str(model), dtype="fp32")  # its own defaults: 20 turns, 128 new tokens
    agent.train("babyai", max_steps=1, run_name="setup", **{
        "run.output_dir": str(tmp_path / "runs"), "model.max_context": "1024", "env.levels": "[GoToRedBallGrey]",
        "env.brief": "true", "agent.action_format": "free", "scheduler.rounds": "[1,3]", "scheduler.step_interval": "1",
        "rollout.tasks_per_step": "2", "rollout.group_size": "2", "rollout.max_new_tokens": "6",
        "eval.before": "false", "eval.after": "false", "trainer.finetune": "full", "trainer.local_envs": "true",
        "trainer.progress": "false"})
    traj = agent.infer("babyai", task_id=1)
    assert traj.max_turns == 3  # the scheduler's final horizon, not the agent's 20
    from agentgym_env_babyai.env import BabyAIEnv  # by class or instance: the same setup as by name

    assert agent.infer(BabyAIEnv, task_id=1).token_ids == traj.token_ids
    own = agent.infer(BabyAIEnv(levels=["GoToRedBallGrey"], brief=True), task_id=1)
    assert own.max_turns == 3 and own.token_ids == traj.token_ids
    assert all(t.end - t.start <= 6 + 1 for t in traj.turns)  # rollout.max_new_tokens (+ an end of turn)
    prompt = agent.engine.tokenizer.decode(traj.token_ids[: traj.prompt_len])
    assert BRIEF_INSTRUCTION[:60] in prompt and "red ball" in prompt
    assert agent.infer("babyai", task_id=1, max_turns=1).max_turns == 1  # an explicit argument still wins


@pytest.mark.slow
def test_a_second_train_gets_its_own_run_directory(tmp_path, capsys):
    """The trainer refuses to write into a directory holding a run; a train() whose run name
    nobody chose (the agent's default) moves on to agent-2, starting from the first one's weights."""
    from agentgym.agents import LLMAgent

    torch.set_num_threads(1)
    model = tiny_model_dir(tmp_path)
    agent = LLMAgent(base_model=str(model), dtype="fp32")
    runs = tmp_path / "runs"
    options = {"run.output_dir": str(runs), "model.max_context": "1024", "env.levels": "[GoToRedBallGrey]",
               "scheduler.rounds": "[1]", "rollout.tasks_per_step": "1", "rollout.group_size": "2",
               "rollout.max_new_tokens": "4", "eval.before": "false", "eval.after": "false",
               "trainer.finetune": "full", "trainer.local_envs": "true", "trainer.progress": "false"}
    metrics = agent.train("babyai", max_steps=1, **options)
    assert f"run: {runs / 'agent'} (agentgym " in capsys.readouterr().out  # what `agentgym train` prints last
    first = agent.base_model
    row = json.loads((runs / "agent" / "metrics.jsonl").read_text().splitlines()[0])
    assert metrics["kl"] is None and row["kl"] is None  # no reference (kl_coef 0): not measured, one meaning
    agent.train("babyai", max_steps=1, **options)
    assert first.startswith(str(runs / "agent")) and agent.base_model.startswith(str(runs / "agent-2"))
    assert len((runs / "agent" / "metrics.jsonl").read_text().splitlines()) == 1  # untouched
    assert agent.trained_config.model.path == first  # the second run continued from the first's weights
