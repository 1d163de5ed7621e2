"""``agentgym-inspect``: look at runs. ``agentgym view`` (browse episodes), ``agentgym report``
(HTML/Markdown report), training curves as PNG, and the indexes behind them.

A plugin like any other: its commands come through ``register_commands`` and its plots and
report are drawn when a training run checkpoints and ends (``on_checkpoint``, ``on_run_end``).
"""
__version__ = "0.1.0"
