"""The ``rl`` trainer: rollout -> rewards -> advantages -> policy update -> checkpoint."""
