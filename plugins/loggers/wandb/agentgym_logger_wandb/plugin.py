"""Hooks only: forwards a training run's lifecycle to :mod:`agentgym_logger_wandb.logger`."""
from agentgym_core import hookimpl


@hookimpl
def on_run_start(run_dir, config, main):
    if main:
        from agentgym_logger_wandb.logger import start

        start(run_dir, config)


@hookimpl
def on_step_end(step, metrics, run_dir):
    from agentgym_logger_wandb.logger import log_step

    log_step(run_dir, step, metrics)


@hookimpl
def on_run_end(run_dir, metrics, status, main):
    if main:
        from agentgym_logger_wandb.logger import finish

        finish(run_dir, metrics, status)
