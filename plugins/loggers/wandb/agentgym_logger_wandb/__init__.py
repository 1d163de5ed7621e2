"""Weights & Biases logging for AgentGym training runs (lifecycle hooks; wandb imported lazily)."""
