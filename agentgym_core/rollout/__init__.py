"""Agent and rollout: episodes as exact token sequences, many at once."""
from .trajectory import Trajectory, Turn

__all__ = ["Trajectory", "Turn"]
