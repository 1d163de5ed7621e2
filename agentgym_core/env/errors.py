"""Errors the env client raises; each names the server, the endpoint and the server's message."""
from __future__ import annotations

from ..errors import AgentGymError


class EnvUnavailable(AgentGymError):
    """An env server stayed unreachable (or kept failing with 5xx) past ``unavailable_after``."""


class EnvRequestError(AgentGymError):
    """An env server refused a request (4xx) or the env itself raised (500)."""

    def __init__(self, message: str, *, status: int, url: str, endpoint: str, server_message: str) -> None:
        super().__init__(message)
        self.status = status
        self.url = url
        self.endpoint = endpoint
        self.server_message = server_message


class EnvSessionNotFound(EnvRequestError):
    """404: the server does not know the session (closed, reaped after its TTL, or server restarted)."""


class EnvServerFull(EnvRequestError):
    """429: every server reached its session cap."""


class EnvAuthError(EnvRequestError):
    """401: the server wants a bearer token and the client sent none or a wrong one."""


class EnvRaised(EnvRequestError):
    """500: the env's own code raised; the episode is over (the session needs a reset)."""


class EnvLaunchError(AgentGymError):
    """A launched env server died or never became healthy; the message holds its stderr."""
