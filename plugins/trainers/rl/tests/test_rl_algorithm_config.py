"""The algorithm options are checked when a config loads: one error naming the key and what is allowed."""
from __future__ import annotations

import subprocess
import sys

import pytest

from agentgym_core.config import load_config
from agentgym_core.errors import ConfigError


@pytest.fixture
def rl(plugin_manager, register_plugin):
    import agentgym_trainer_rl.plugin as plugin

    register_plugin(plugin, name="rl")
    return plugin_manager


def load(manager, *overrides):
    return load_config(None, ["trainer.name=rl", *overrides], manager=manager).trainer


@pytest.mark.parametrize("overrides, expected", [
    (["trainer.clip_ratio_c=1"], "trainer.clip_ratio_c must be > 1 (null: no dual clip; verl and the default: 3), got 1.0"),
    (["trainer.clip_ratio_c=0.5"], "trainer.clip_ratio_c must be > 1 (null: no dual clip; verl and the default: 3), got 0.5"),
    (["trainer.kl_clamp=0"], "trainer.kl_clamp must be > 0 (null: unbounded; verl and the default: 10), got 0.0"),
    (["trainer.kl_target=0"], "trainer.kl_target must be > 0, got 0.0"),
    (["trainer.kl_horizon=0"], "trainer.kl_horizon must be >= 1 (episodes), got 0"),
    (["trainer.loss_norm_tokens=-2"], "trainer.loss_norm_tokens must be > 0, got -2.0"),
    (["trainer.kl_estimator=k4"], "trainer.kl_estimator must be one of k1, kl, k2, mse, k3, low_var_kl, abs, got 'k4'"),
    (["trainer.kl_mode=both"], "trainer.kl_mode must be one of loss, reward, got 'both'"),
    (["trainer.loss_agg=seq-mean"], "trainer.loss_agg must be one of token-mean, token, seq-mean-token-mean, "
                                    "sequence, seq-mean-token-sum, seq-mean-token-sum-norm, got 'seq-mean'"),
    (["trainer.policy_loss=cispo"], "trainer.policy_loss must be one of ppo, gspo, got 'cispo'"),
    (["trainer.kl_ctrl=pid"], "trainer.kl_ctrl must be one of fixed, adaptive, got 'pid'"),
    (["trainer.credit=token"], "trainer.credit must be one of episode, turn, got 'token'"),
    (["trainer.algorithm=drgrpo"], "trainer.algorithm must be one of ppo, gae, grpo, dr_grpo, rloo, reinforce_pp, "
                                   "reinforce_pp_baseline, got 'drgrpo'"),
    (["trainer.kl_ctrl=adaptive"], "trainer.kl_ctrl: adaptive scales trainer.kl_coef, which is 0"),
    (["trainer.loss_agg=seq-mean-token-sum-norm"], "trainer.loss_norm_tokens, which is not set"),
    (["trainer.credit=turn", "trainer.algorithm=ppo"], "trainer.credit: turn applies to the group estimators "
                                                       "(grpo, dr_grpo, rloo, reinforce_pp_baseline), not 'ppo'"),
    (["trainer.credit=turn", "trainer.algorithm=reinforce_pp"], "not 'reinforce_pp', which already gives"),
])
def test_bad_algorithm_option_one_clear_error(rl, overrides, expected):
    with pytest.raises(ConfigError) as info:
        load(rl, *overrides)
    assert expected in str(info.value), str(info.value)


def test_defaults_and_good_values_pass(rl):
    tc = load(rl)
    assert (tc.clip_ratio_c, tc.kl_clamp, tc.loss_agg, tc.policy_loss, tc.kl_ctrl, tc.credit) == (
        3.0, 10.0, None, "ppo", "fixed", "episode")  # verl's dual clip and k3 bound
    off = load(rl, "trainer.clip_ratio_c=null", "trainer.kl_clamp=null")
    assert (off.clip_ratio_c, off.kl_clamp) == (None, None)
    tc = load(rl, "trainer.algorithm=dr_grpo", "trainer.loss_agg=seq-mean-token-sum-norm", "trainer.loss_norm_tokens=512",
              "trainer.clip_ratio_c=3", "trainer.kl_clamp=10", "trainer.kl_estimator=low_var_kl", "trainer.kl_coef=0.01",
              "trainer.kl_ctrl=adaptive", "trainer.kl_target=0.05", "trainer.kl_horizon=1000", "trainer.credit=turn",
              "trainer.policy_loss=gspo")
    assert tc.loss_norm_tokens == 512 and tc.clip_ratio_c == 3 and tc.credit == "turn"
    for old in ("token", "sequence"):  # the older names still load
        assert load(rl, f"trainer.loss_agg={old}").loss_agg == old
    for name in ("rloo", "reinforce_pp_baseline", "grpo"):
        load(rl, f"trainer.algorithm={name}", "trainer.credit=turn")


def test_config_module_stays_torch_free():
    code = "import sys, agentgym_trainer_rl.config as c; c.RLConfig(credit='turn'); assert 'torch' not in sys.modules"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
