"""The environment protocol: :class:`BaseEnv`, and (in submodules) its HTTP server, client and launcher."""
from .base import BaseEnv

__all__ = ["BaseEnv"]
