"""Hooks only: registers the ``judge`` reward, and notes the run directory for its cache (nothing heavy imported)."""
from agentgym_core import hookimpl


@hookimpl
def register_rewards(registry):
    registry.add("judge", "agentgym_reward_judge.reward:JudgeReward",
                 description="a model judge's rubric score of the episode, in [0, 1] on the last turn (gated by success)")


@hookimpl
def on_run_start(run_dir, config, main):
    """The verdict cache of a judge reward without ``run_dir`` goes to this run's directory, and one without
    ``tokenizer`` decodes the episodes' prompts (the task) with the run's model's tokenizer."""
    from . import cache

    cache.current_run_dir = str(run_dir)
    try:
        cache.current_model = str(config.model.path) if config is not None and config.model.path else None
    except (AttributeError, KeyError):
        cache.current_model = None


@hookimpl
def on_run_end(run_dir, metrics, status, main):
    """The run is over: later judge rewards in this process no longer write into its directory."""
    from . import cache

    if cache.current_run_dir == str(run_dir):
        cache.current_run_dir = cache.current_model = None
