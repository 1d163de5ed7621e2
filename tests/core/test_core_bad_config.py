"""Bad configs through the real CLI: each gives one clear line, exit code 1, no traceback."""
import importlib
from pathlib import Path

import pytest

from agentgym_core.config import load_config
from agentgym_core.errors import ConfigError

QUICKSTART = Path(__file__).resolve().parents[2] / "configs" / "quickstart.yaml"
TWO_REWARDS = "rewards: [{name: success, weight: 1.0}, {name: success, weight: 0.3}]\n"


def one_error_line(res) -> str:
    assert res.returncode == 1, res.stdout
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), res.stderr
    return lines[0]


@pytest.mark.parametrize(
    "yaml_text, overrides, expected",
    [
        ("rollout: {group_size: many}\n", [], "rollout.group_size"),          # wrong type
        ("scheduler: {turns: 3, tunrs: 4}\n", [], "Did you mean 'turns'?"),   # unknown key
        ("scheduler: {name: fixd}\n", [], "Did you mean 'fixed'?"),           # unknown plugin name
        ("rollout: {concurrency: -4}\n", [], "rollout.concurrency must be >= 1"),  # negative size
        ("", ["env.servers=0"], "env.name' is required"),                     # missing name
        ("rollouts: {}\n", [], "Did you mean 'rollout'?"),                    # unknown section
        ("model: [1, 2]\n", [], "must be a mapping"),                          # wrong shape
        ("run: {name: a/b}\n", [], "run.name must be a non-empty folder name"),
        # one item of a list: refused, with the whole list (this change applied) to paste instead
        (TWO_REWARDS, ["rewards.1.weight=0.5"],
         "lists cannot be changed item by item from the command line; give the whole list, quoted for the "
         "shell: 'rewards=[{name: success, weight: 1.0}, {name: success, weight: 0.5}]'"),
        (TWO_REWARDS, ["rewards[1].weight=0.5"], "'rewards=[{name: success, weight: 1.0}, {name: success, weight: 0.5}]'"),
        ("", ["rewards.0.name=formatt"], "'rewards=[{name: formatt, weight: 1.0}]'"),  # the default list
        ("trainer: {lora_targets: [a, b]}\n", ["trainer.lora_targets.0=q"], "'trainer.lora_targets=[q, b]'"),
        # {name:success} without a space is one YAML key: say so instead of "name is required"
        ("", ["rewards=[{name:success,weight:1}]"], "write 'name: success' with a space after the colon"),
        ("rewards: [{name:success}]\n", [], "config key 'rewards[0]' has the key 'name:success'"),
        ("", ["run={name:x}"], "config key 'run' has the key 'name:x': write 'name: x'"),
        ("", ["agent.action_format=json"], "agent.action_format must be react, tags or free (or null: the env's own), got 'json'"),
        ("", ["eval.temperature=-1"], "eval.temperature must be >= 0 (0: greedy), got -1.0"),
        ("", ["eval.k=0"], "eval.k must be >= 1, got 0"),
        ("", ["rollout.top_p=0"], "rollout.top_p must be in (0, 1], got 0.0"),
        ("", ["agent.history_window=-1"], "agent.history_window must be >= 0"),
        ("rewards: [{name: success, weight: .nan}]\n", [], "the reward's weight must be a finite number, got nan"),
        ("", ["scheduler.turns=0"], "scheduler.turns must be >= 1, got 0"),
        ("", ["env.name=my_pkg.env:MyEnv"], "An import string names an env only for `agentgym env serve/play`"),                 # core's fixed scheduler
        ("", ["backend.name=cpu", "backend.threads=-1"], "backend.threads must be >= 0"),  # core's cpu backend
    ],
)
def test_bad_config_one_clear_error(run_cli, tmp_path, yaml_text, overrides, expected):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(yaml_text or "{}\n")
    res = run_cli("config", "show", "-c", str(cfg), *overrides, env={"AGENTGYM_LOAD_PLUGINS": ""})
    line = one_error_line(res)
    assert expected in line, line


@pytest.mark.parametrize(
    "override, expected",
    [
        ("env.servers=0", "env.servers must be >= 1, got 0"),
        ("env.max_sessions=-1", "env.max_sessions must be >= 1 (sessions per server), got -1"),
        ("env.ttl=-1", "env.ttl must be >= 0 (seconds; 0: sessions never expire), got -1.0"),
        ("env.timeout=0", "env.timeout must be > 0 (seconds), got 0.0"),
        ("env.unavailable_after=nan", "env.unavailable_after must be > 0 (seconds), got nan"),
        ("env.latency_s=-1", "env.latency_s must be >= 0 (seconds; 0: none added), got -1.0"),
        ("env.latency_sigma=-0.5", "env.latency_sigma must be >= 0 (0: every answer takes env.latency_s), got -0.5"),
        ("engine.gpu_memory_utilization=1.5", "engine.gpu_memory_utilization must be in (0, 1], got 1.5"),
        ("engine.gpu_memory_utilization=0", "engine.gpu_memory_utilization must be in (0, 1], got 0.0"),
        ("engine.tensor_parallel_size=0", "engine.tensor_parallel_size must be >= 1 (GPUs), got 0"),
        ("engine.max_batch_size=0", "engine.max_batch_size must be >= 1, got 0"),
        ("env.train_seeds=0", "env.train_seeds must be >= 1, got 0"),
        ("env.reward=dense", "env.reward must be binary or minigrid, got 'dense'"),
        ("env.levels=[GoToLocal,GoTooDoor]", "unknown BabyAI level 'GoTooDoor'. Did you mean 'GoToDoor'"),
    ],
)
def test_bad_env_frame_and_vllm_engine(run_cli, override, expected):
    """Frame keys of the env section, and the vllm engine's options (its module imports no vllm)."""
    res = run_cli("config", "show", "env.name=babyai", "engine.name=vllm", override,
                  env={"AGENTGYM_LOAD_PLUGINS": "babyai,vllm"})
    line = one_error_line(res)
    assert expected in line, line


def test_audit_warmup_steps_through_cli(run_cli):
    """The audit's command: a negative warm-up used to pass and train with a negative learning rate."""
    res = run_cli("config", "show", "-c", str(QUICKSTART), "trainer.warmup_steps=-5", site=False)
    assert one_error_line(res) == (
        "Error: config section 'trainer': trainer.warmup_steps must be >= 0 (0: no warm-up), got -5")


def test_switching_env_names_every_leftover_option_at_once(run_cli):
    """The quickstart file pointed at another env: one error listing all babyai options left behind."""
    pytest.importorskip("agentgym_env_textcraft")
    res = run_cli("config", "show", "-c", str(QUICKSTART), "env.name=textcraft", site=False)
    line = one_error_line(res)
    assert ("5 keys under env are not options of env 'textcraft': env.levels, env.train_seeds, env.test_seeds, "
            "env.brief, env.lenient. If they belong to the env the file was written for, remove them") in line, line


def test_list_item_in_a_later_file(tmp_path):
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text(TWO_REWARDS)
    second.write_text("rewards: {1: {weight: 0.5}}\n")
    with pytest.raises(ConfigError, match=r"b\.yaml' cannot be merged.*a list must be given whole"):
        load_config([first, second], [], manager=None)


# -- the installed rl trainer and hf engine (importing their config imports torch, not a model) --
REAL_PLUGINS = ("agentgym_trainer_rl", "agentgym_engine_hf", "agentgym_engine_vllm", "agentgym_env_babyai",
                "agentgym_scheduler_scaling", "agentgym_reward_shaping")


@pytest.fixture
def real(plugin_manager, register_plugin):
    for pkg in REAL_PLUGINS:
        register_plugin(importlib.import_module(f"{pkg}.plugin"), name=pkg)
    return plugin_manager


@pytest.mark.parametrize(
    "override, expected",
    [
        ("trainer.warmup_steps=-5", "trainer.warmup_steps must be >= 0 (0: no warm-up), got -5"),
        ("trainer.lora_layers=-1", "trainer.lora_layers must be >= 0 (0: every layer), got -1"),
        ("trainer.save_every=-1", "trainer.save_every must be >= 0 (0: only at the end), got -1"),
        ("trainer.keep_checkpoints=-1", "trainer.keep_checkpoints must be >= 0 (0: keep all), got -1"),
        ("trainer.lora_alpha=-3", "trainer.lora_alpha must be >= 1, got -3"),
        ("trainer.lora_alpha=0", "trainer.lora_alpha must be >= 1, got 0"),
        ("trainer.lora_r=0", "trainer.lora_r must be >= 1, got 0"),
        ("trainer.lora_dropout=1", "trainer.lora_dropout must be in [0, 1), got 1.0"),
        ("trainer.max_nonfinite=0", "trainer.max_nonfinite must be >= 1, got 0"),
        ("trainer.steps=0", "trainer.steps must be >= 1, got 0"),
        ("trainer.ppo_epochs=0", "trainer.ppo_epochs must be >= 1, got 0"),
        ("trainer.mini_batches=0", "trainer.mini_batches must be >= 1, got 0"),
        ("trainer.grad_accum=0", "trainer.grad_accum must be >= 1, got 0"),
        ("trainer.lr=0", "trainer.lr must be > 0, got 0.0"),
        ("trainer.lr=nan", "trainer.lr must be > 0, got nan"),
        ("trainer.weight_decay=-0.1", "trainer.weight_decay must be >= 0, got -0.1"),
        ("trainer.clip_ratio=0", "trainer.clip_ratio must be in (0, 1), got 0.0"),
        ("trainer.clip_ratio=1", "trainer.clip_ratio must be in (0, 1), got 1.0"),
        ("trainer.clip_ratio_high=0", "trainer.clip_ratio_high must be > 0 (null: same as clip_ratio), got 0.0"),
        ("trainer.kl_coef=-0.1", "trainer.kl_coef must be >= 0 (0: no KL term), got -0.1"),
        ("trainer.entropy_coef=-0.1", "trainer.entropy_coef must be >= 0 (0: no entropy bonus), got -0.1"),
        ("trainer.max_grad_norm=0", "trainer.max_grad_norm must be > 0 (inf: no clipping), got 0.0"),
        ("trainer.vf_coef=-1", "trainer.vf_coef must be >= 0, got -1.0"),
        ("trainer.value_clip=0", "trainer.value_clip must be > 0 (inf: no value clipping), got 0.0"),
        ("trainer.gamma=1.5", "trainer.gamma must be in [0, 1], got 1.5"),
        ("trainer.lam=-0.5", "trainer.lam must be in [0, 1], got -0.5"),
        ("engine.max_batch_size=0", "engine.max_batch_size must be >= 1, got 0"),
        ("engine.max_cached_episodes=-1", "engine.max_cached_episodes must be >= 0 (0: keep none), got -1"),
        ("engine.threads=-2", "engine.threads must be >= 0 (0: torch's default), got -2"),
    ],
)
def test_bad_trainer_and_hf_engine_values(real, override, expected):
    with pytest.raises(ConfigError) as info:
        load_config(QUICKSTART, [override], real)
    assert str(info.value).endswith(expected), str(info.value)


def test_shipped_config_and_off_values_pass(real):
    """The quickstart passes, and 0 where 0 means "off" (or the edge of a closed range) is allowed."""
    load_config(QUICKSTART, [], real)
    cfg = load_config(QUICKSTART, [
        "trainer.warmup_steps=0", "trainer.save_every=0", "trainer.keep_checkpoints=0", "trainer.lora_layers=0",
        "trainer.kl_coef=0", "trainer.entropy_coef=0", "trainer.gamma=0", "trainer.lam=1",
        "trainer.max_grad_norm=inf", "trainer.clip_ratio_high=0.28", "engine.max_cached_episodes=0",
        "engine.threads=0", "env.ttl=0", "agent.action_format=react", "agent.action_format=null",
        "eval.tasks=0", "rewards=[{name: success, weight: 1.0}, {name: format, weight: -0.5}]",
    ], real)
    assert cfg.trainer.max_grad_norm == float("inf") and cfg.agent.action_format is None
