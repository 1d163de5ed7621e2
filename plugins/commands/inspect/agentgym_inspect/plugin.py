"""Registers ``view``, ``report`` and ``compare`` and draws curves and the report during training (hooks only)."""
from agentgym_core import hookimpl


@hookimpl
def register_commands(registry):
    registry.add("report", "agentgym_inspect.report_cmd:report", description="Write an HTML/Markdown report of a run.")
    registry.add("view", "agentgym_inspect.view_cmd:view", description="Browse a run's episodes in a local web page.")
    registry.add("compare", "agentgym_inspect.compare_cmd:compare",
                 description="Overlay several runs' curves (seeds as mean and band) with their evaluations.")


@hookimpl
def on_checkpoint(run_dir):
    from agentgym_inspect.render import render_run

    render_run(run_dir)


@hookimpl
def on_run_end(run_dir, status, main):
    if main:
        from agentgym_inspect.render import render_run

        render_run(run_dir, report=status == "completed")
