"""The internal plugin ``core``: the defaults core itself needs."""
from agentgym_core.hookspecs import hookimpl


@hookimpl
def register_schedulers(registry):
    registry.add("fixed", "agentgym_core.defaults.components:FixedScheduler",
                 description="the same maximum number of turns at every step")


@hookimpl
def register_rewards(registry):
    registry.add("success", "agentgym_core.defaults.components:SuccessReward",
                 description="1 on the last turn of a successful episode, else 0")
    registry.add("env", "agentgym_core.defaults.components:EnvReward",
                 description="the env's own step rewards (e.g. a service env's env.reward: graded)")


@hookimpl
def register_backends(registry):
    registry.add("cpu", "agentgym_core.defaults.components:CPUBackend",
                 description="CPU, gloo process groups, bf16 where the CPU supports it")


@hookimpl
def register_strategies(registry):
    registry.add("default", "agentgym_core.rollout.strategy:Strategy",
                 description="one episode per task, every reply an action")


@hookimpl
def register_context_policies(registry):
    registry.add("full", "agentgym_core.rollout.context:ContextPolicy",
                 description="the model sees the whole episode so far")
    registry.add("window", "agentgym_core.rollout.context:WindowContext",
                 description="the initial prompt, a pinned turn and the last K turns (chunked: moves K at a time)")


#: Core's commands, in the order ``agentgym --help`` lists them: (name, target, one line of help).
COMMANDS = (
    ("plugins", "agentgym_core.cli.plugins_cmd:plugins", "List installed plugins and what each registered."),
    ("list", "agentgym_core.cli.plugins_cmd:list_components", "List registered components of one kind."),
    ("config", "agentgym_core.cli.config_cmd:config", "Compose and inspect run configs."),
    ("new", "agentgym_core.cli.new_cmd:new", "Create a new plugin package from the template."),
    ("env", "agentgym_core.cli.env_cmd:env", "Serve or play an environment."),
    ("rollout", "agentgym_core.cli.rollout_cmd:rollout", "Play episodes with a model and report success and speed."),
    ("train", "agentgym_core.cli.train_cmd:train", "Train an agent with RL from a config."),
    ("eval", "agentgym_core.cli.eval_cmd:eval_", "Evaluate a model (or an env's expert) on an env's test split."),
    ("demos", "agentgym_core.cli.demos_cmd:demos", "Record an expert's episodes on training tasks as chat JSONL."),
)


@hookimpl
def register_commands(registry):
    for name, target, description in COMMANDS:
        registry.add(name, target, description=description)
