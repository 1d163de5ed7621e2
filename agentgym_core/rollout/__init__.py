"""Agent and rollout: episodes as exact token sequences, many at once."""
from .trajectory import Trajectory, Turn

__all__ = ["Trajectory", "Turn", "rollout", "run_rollout"]


def __getattr__(name: str):  # lazy: importing the package stays cheap
    if name in ("rollout", "run_rollout"):
        from . import runner

        return getattr(runner, name)
    raise AttributeError(name)
