"""Agent defaults are declared once: the run config's sections; ``AgentSettings`` and ``LLMAgent`` read them."""
from __future__ import annotations

import dataclasses
import inspect

from agentgym_core.assembly import AGENT_SETTING_SOURCES, AgentSettings
from agentgym_core.config_schema import schema_default


def test_agent_settings_defaults_are_the_config_sections_defaults():
    own = {"max_context": None, "seed": None}  # built directly: no cap, not reproducible (see its docstring)
    for f in dataclasses.fields(AgentSettings):
        section, key = AGENT_SETTING_SOURCES[f.name]
        want = own[f.name] if f.name in own else schema_default(f"{section}.{key}")
        assert f.default == want, (f"AgentSettings.{f.name} defaults to {f.default!r} but {section}.{key} to "
                                   f"{schema_default(f'{section}.{key}')!r}: read it from config_schema, do not restate it")


def test_llm_agent_defaults_are_the_schemas_or_its_declared_inference_defaults():
    from agentgym.agents import INFERENCE_DEFAULTS, LLMAgent
    from agentgym.training import TRAIN_KEYS

    keys = {("engine" if arg == "engine_name" else arg): key for arg, key in TRAIN_KEYS.items()}
    params = inspect.signature(LLMAgent.__init__.__wrapped__).parameters.values()
    for p in params:
        if p.default is p.empty or p.name == "strategy_options":
            continue
        if p.name in INFERENCE_DEFAULTS:
            assert p.default == INFERENCE_DEFAULTS[p.name]
        else:
            assert p.name in keys, f"LLMAgent({p.name}=...) has a default neither from config_schema nor INFERENCE_DEFAULTS"
            assert p.default == schema_default(keys[p.name]), (
                f"LLMAgent's {p.name} defaults to {p.default!r} but {keys[p.name]} to {schema_default(keys[p.name])!r}")


def test_schema_default_reads_fields_and_default_components():
    assert schema_default("rollout.temperature") == 1.0
    assert schema_default("engine.name") == "hf"
    assert schema_default("agent.strategy.name") == "default"
    assert schema_default("agent.context.name") == "full"
    assert schema_default("env.urls") == []
