"""The trajectory viewer (``agentgym view RUN``): a loopback web page over a run directory."""
