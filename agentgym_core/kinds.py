"""The kinds of plugin, in one table: what each registers, its noun in messages, its hook, its template.

The hookspecs' list of registration hooks, the plugin manager's registries, the nouns of error
messages ("unknown env 'x'"), ``agentgym list`` and ``agentgym new plugin --kind`` all read
:data:`PLUGIN_KINDS`; a new kind is one row here plus its hookspec (with its docstring) in
:mod:`agentgym_core.hookspecs`.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PluginKind:
    #: The registry's name, plural: ``agentgym list envs``, ``manager.registry("envs")``.
    name: str
    #: The singular noun of messages ("unknown env 'x'"); ``agentgym list env`` reads it too.
    noun: str
    #: The registration hook a plugin implements: ``register_envs(registry)``.
    hook: str
    #: ``agentgym new plugin NAME --kind <noun>`` writes a working plugin of this kind.
    scaffold: bool = False


#: Every kind of plugin, in the order ``agentgym plugins`` and ``agentgym list`` show them.
PLUGIN_KINDS = (
    PluginKind("envs", "env", "register_envs", scaffold=True),
    PluginKind("rewards", "reward", "register_rewards", scaffold=True),
    PluginKind("schedulers", "scheduler", "register_schedulers", scaffold=True),
    PluginKind("backends", "backend", "register_backends", scaffold=True),
    PluginKind("trainers", "trainer", "register_trainers", scaffold=True),
    PluginKind("engines", "engine", "register_engines", scaffold=True),
    PluginKind("strategies", "strategy", "register_strategies"),
    PluginKind("contexts", "context policy", "register_context_policies"),
    PluginKind("commands", "command", "register_commands"),
    PluginKind("experts", "expert", "register_experts"),
    PluginKind("estimators", "advantage estimator", "register_estimators"),
    PluginKind("policy_losses", "policy loss", "register_policy_losses"),
)

#: The registry names, in table order.
KINDS = tuple(k.name for k in PLUGIN_KINDS)
#: Registry name -> singular noun.
SINGULAR = {k.name: k.noun for k in PLUGIN_KINDS}
#: Registry name -> its registration hook.
REGISTRATION_HOOKS = {k.name: k.hook for k in PLUGIN_KINDS}
#: ``agentgym new plugin --kind`` choice (the noun) -> registry name.
SCAFFOLD_KINDS = {k.noun: k.name for k in PLUGIN_KINDS if k.scaffold}
