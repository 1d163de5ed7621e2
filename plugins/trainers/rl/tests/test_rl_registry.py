"""The estimator and policy-loss registry: every registered name trains a step, and what reads the
registry (config validation, default aggregation, the docs table) agrees with it."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from agentgym_trainer_rl.config import RLConfig, effective_loss_agg
from agentgym_trainer_rl.registry import ESTIMATORS, POLICY_LOSSES, Entries, Estimator, docs_table

sys.path.insert(0, str(Path(__file__).parent))  # the tiny update of test_rl_update_options
DOCS = Path(__file__).resolve().parents[4] / "docs" / "training.md"
START, END = "<!-- registry tables: start -->\n", "\n<!-- registry tables: end -->"


def test_docs_table_is_the_registry():
    text = DOCS.read_text(encoding="utf-8")
    assert START in text and END in text, f"{DOCS} lost its registry table markers"
    table = text[text.index(START) + len(START):text.index(END)]
    assert table == docs_table(), "docs/training.md is stale: paste `python -m agentgym_trainer_rl.registry` there"


def test_names_aliases_and_properties():
    assert ESTIMATORS.names() == ("ppo", "gae", "grpo", "dr_grpo", "rloo", "reinforce_pp", "reinforce_pp_baseline")
    assert ESTIMATORS.get("gae") is ESTIMATORS.get("ppo") and ESTIMATORS.get("ppo").needs_critic
    assert [e.name for e in ESTIMATORS if e.grouped] == ["grpo", "dr_grpo", "rloo", "reinforce_pp_baseline"]
    assert ESTIMATORS.get("grpo").function == "agentgym_trainer_rl.algorithms:grpo"  # declared on the function
    assert POLICY_LOSSES.names() == ("ppo", "gspo")
    for entry in (*ESTIMATORS, *POLICY_LOSSES):
        assert entry.loss_agg in (None, "token-mean", "seq-mean-token-mean", "seq-mean-token-sum")
        assert entry.description
    with pytest.raises(ValueError, match="registered twice"):
        Entries("estimator", "trainer.algorithm", "estimator", (), "estimators").add(
            Estimator("a", "m:f", "x", aliases=("a",)))


def test_functions_resolve():
    for entry in ESTIMATORS:
        assert callable(entry.estimate), entry.name
    for loss in POLICY_LOSSES:
        assert callable(loss.loss), loss.name


def test_unknown_names_suggest_the_registered_ones():
    with pytest.raises(ValueError, match="one of ppo, gae, grpo.*got 'drgrpo'. Did you mean 'dr_grpo'"):
        RLConfig(algorithm="drgrpo")
    with pytest.raises(ValueError, match="trainer.policy_loss must be one of ppo, gspo, got 'gpso'. Did you mean 'gspo'"):
        RLConfig(policy_loss="gpso")
    with pytest.raises(ValueError, match="trainer.policy_loss must be one of ppo, gspo, got 'x'"):
        POLICY_LOSSES.get("x")


def test_default_loss_agg_comes_from_the_entries():
    for e in ESTIMATORS:
        for name in e.names:
            assert effective_loss_agg(None, "ppo", name) == (e.loss_agg or "token-mean")
            assert effective_loss_agg(None, "gspo", name) == POLICY_LOSSES.get("gspo").loss_agg


def test_every_estimator_is_a_method():
    m = RLConfig.methods()  # what the umbrella's LLMAgent.train(method=...) reads
    assert set(m.values()) == {e.name for e in ESTIMATORS}
    for e in ESTIMATORS:
        assert all(m[spelling] == e.name for spelling in (*e.methods, *e.names))
        assert next(s for s, name in m.items() if name == e.name) == e.method  # shown first
    assert m["REINFORCE++"] == "reinforce_pp" and m["gae"] == "ppo"


# -- every registered name trains one step -------------------------------------------------------


def _step(algorithm: str, policy_loss: str) -> tuple[dict, float]:
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from test_rl_update_options import TRAJS, updater

    from agentgym_trainer_rl.batch import build_batch

    def lm_weights():  # the language model's, not a value head's
        return torch.cat([p.detach().flatten() for p in up.module.lm.parameters()])

    torch.manual_seed(0)
    up = updater(algorithm, policy_loss=policy_loss, ppo_epochs=2)  # a second epoch: ratios away from 1
    before = lm_weights().clone()
    metrics = up.step(build_batch(TRAJS))
    return metrics, float((lm_weights() - before).abs().max())


@pytest.mark.parametrize("policy_loss", POLICY_LOSSES.names())
@pytest.mark.parametrize("algorithm", ESTIMATORS.names())
def test_every_registered_name_trains_a_step(algorithm, policy_loss):
    """Each estimator (by each of its names) with each policy loss: two finite updates that move the weights."""
    metrics, moved = _step(algorithm, policy_loss)
    assert math.isfinite(metrics["loss"]) and math.isfinite(metrics["pg_loss"])
    assert metrics["updates"] == 2 and metrics["nonfinite_skipped"] == 0
    assert moved > 0, f"{algorithm} with policy_loss {policy_loss}: the weights did not change"
    assert ("value_loss" in metrics) == ESTIMATORS.get(algorithm).needs_critic
    assert ("lone_groups" in metrics) == ESTIMATORS.get(algorithm).grouped
