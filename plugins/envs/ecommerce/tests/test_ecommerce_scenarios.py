"""The generated store and tasks: reproducible from the seed, one goal per intent, irregular splits, options."""
from __future__ import annotations

import collections

import pytest

from agentgym_core.config import check_options
from agentgym_core.errors import AgentGymError, ConfigError
from agentgym_env_ecommerce import plugin
from agentgym_env_ecommerce.catalog import catalog
from agentgym_env_ecommerce.env import ECommerceConfig, ECommerceServiceEnv
from agentgym_env_ecommerce.scenarios import FORBIDDEN_KINDS, INTENTS, scenario
from agentgym_env_ecommerce.store import RETURN_DAYS


def test_registered_without_importing_the_env(plugin_manager, register_plugin):
    register_plugin(plugin, name="ecommerce-test")
    entry = plugin_manager.registry("envs").get("ecommerce")
    assert entry.target == "agentgym_env_ecommerce.env:ECommerceServiceEnv"
    assert entry.load() is ECommerceServiceEnv


def test_store_and_tasks_are_reproducible_from_the_seed():
    assert catalog(0) == catalog(0) and catalog(0) != catalog(1)
    first, again = scenario(17), scenario(17)
    assert first.db == again.db and first.goal == again.goal and first.details == again.details
    assert first.persona == again.persona and first.facts == again.facts
    other_seed = scenario(17, store_seed=5)
    assert other_seed.db != first.db and other_seed.intent == first.intent
    env = ECommerceServiceEnv()
    assert env.reset(task_id=40) == env.reset(task_id=40) == ECommerceServiceEnv().reset(task_id=40)


def test_catalog_variants_have_distinct_prices_and_final_sale_products():
    for product in catalog(0).products:
        prices = [v.price for v in product.variants]
        assert len(set(prices)) == len(prices) and min(prices) > 0, product.name
    assert {p.name for p in catalog(0).products if p.final_sale} == {"Earbuds", "Phone Case", "Swimsuit"}


def test_every_intent_has_its_goal():
    cat = catalog(0)
    kinds = collections.Counter()
    for task_id in range(len(INTENTS) * 12):
        s = scenario(task_id)
        order, goal_order = s.db["orders"][s.order_id], s.goal["orders"][s.order_id]
        assert s.order_id in s.customer["orders"] and s.intent == INTENTS[task_id % len(INTENTS)]
        kinds[s.kind] += 1
        if s.intent in ("order_status", "forbidden"):
            assert s.goal == s.db and not s.writes
        else:
            assert s.goal != s.db and len(s.writes) == 1 and s.writes[0][1]["order_id"] == s.order_id
            changed = [oid for oid in s.db["orders"] if s.db["orders"][oid] != s.goal["orders"][oid]]
            assert changed == [s.order_id]
        if s.intent == "order_status":
            assert s.facts[0] == ("status", order["status"])
        if s.intent == "cancel":
            assert order["status"] == "pending" and goal_order["status"] == "cancelled"
            assert s.facts == [("refund", f"${order['total']:.2f}")]
        if s.intent in ("return", "exchange"):
            assert order["status"] == "delivered" and order["delivered_days_ago"] <= RETURN_DAYS
            assert not any(cat.product_of(i).final_sale for i in s.details["items"])
        if s.kind == "return_late":
            assert order["delivered_days_ago"] > RETURN_DAYS
        if s.kind == "return_final_sale":
            assert cat.product_of(s.details["items"][0]).final_sale
        if s.kind in ("cancel_shipped", "address_shipped"):
            assert order["status"] != "pending"
        if s.kind == "refund_elsewhere":
            assert s.details["payment"] == "paypal" and order["payment_method_id"].startswith("credit_card")
    assert set(kinds) == set(INTENTS) - {"forbidden"} | set(FORBIDDEN_KINDS)


def test_customers_are_told_apart_by_name_and_zip():
    for task_id in range(60):
        s = scenario(task_id)
        keys = [(c["name"], c["zip"]) for c in s.db["customers"].values()]
        emails = [c["email"] for c in s.db["customers"].values()]
        assert len(set(keys)) == len(keys) and len(set(emails)) == len(emails)


def test_splits_are_explicit_interleaved_and_disjoint():
    env = ECommerceServiceEnv()
    splits = env.splits()
    train, test = splits["train"], splits["test"]
    assert sorted(train + test) == list(range(1400)) and not set(train) & set(test)
    assert 0.15 < len(test) / 1400 < 0.25
    assert test != list(range(test[0], test[0] + len(test)))  # not a contiguous range
    assert env.describe()["split_ranges"] == {"train": None, "test": None}
    per_intent = collections.Counter(env.category(t) for t in test)
    assert set(per_intent) == set(INTENTS) and min(per_intent.values()) >= 25
    assert ECommerceServiceEnv(test_fraction=0.5).splits()["test"][:3] != test[:3] or len(
        ECommerceServiceEnv(test_fraction=0.5).splits()["test"]) > len(test)


def test_intents_option_restricts_the_tasks():
    env = ECommerceServiceEnv(intents="cancel, forbidden")
    assert {env.category(t) for t in env.splits()["test"]} == {"cancel", "forbidden"}
    env.reset(task_id=3)
    assert env.scenario.intent == "forbidden"
    assert ECommerceServiceEnv(intents=["return"]).describe()["intents"] == ["return"]


@pytest.mark.parametrize("options, message", [
    ({"intents": "refund"}, "unknown intent 'refund'"),
    ({"test_fraction": 1.0}, "test_fraction must be in (0, 1)"),
    ({"max_turns": 0}, "max_turns must be >= 1"),
    ({"customer": "llm"}, "customer must be rules or model"),
    ({"customer": "model"}, "needs env.customer_model"),
])
def test_bad_options_are_refused_with_the_key(options, message):
    with pytest.raises((ConfigError, ValueError), match=message.replace("(", r"\(").replace(")", r"\)")):
        ECommerceServiceEnv(**options)
    with pytest.raises(AgentGymError, match="env 'ecommerce'"):  # as `env serve --options` and a run config check it
        check_options("env 'ecommerce'", ECommerceConfig, options)


def test_unknown_option_gets_a_suggestion():
    with pytest.raises(AgentGymError, match="Did you mean 'max_turns'"):
        check_options("env 'ecommerce'", ECommerceConfig, {"max_turn": 5})


def test_task_ids_out_of_range_are_refused():
    env = ECommerceServiceEnv(num_tasks=70)
    with pytest.raises(ValueError, match=r"\[0, 70\)"):
        env.reset(task_id=70)
    assert env.reset(seed=3) == env.reset(seed=3)


def test_config_fields_are_the_constructor_keywords():
    import dataclasses
    import inspect

    params = list(inspect.signature(ECommerceServiceEnv.__init__).parameters.values())[1:]
    fields = dataclasses.fields(ECommerceConfig)
    assert [p.name for p in params] == [f.name for f in fields]
    defaults = {f.name: f.default if f.default is not dataclasses.MISSING else f.default_factory() for f in fields}
    assert {p.name: p.default for p in params} == {**defaults, "customer_engine_options": None}


def test_no_torch_at_import():
    import subprocess
    import sys

    code = ("import sys, agentgym_env_ecommerce.plugin, agentgym_env_ecommerce.env, agentgym_env_ecommerce.agents; "
            "e = agentgym_env_ecommerce.env.ECommerceServiceEnv(); e.reset(task_id=3); e.step('respond(\"hi\")'); "
            "assert 'torch' not in sys.modules and 'transformers' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
