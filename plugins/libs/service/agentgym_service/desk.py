"""The agent's side of one episode's database: tools run as methods of a :class:`Desk` subclass.

A domain writes, for each tool of its :class:`~agentgym_service.tools.ToolSet`:

- ``def <read tool>(self, **args) -> str``: the text the agent sees; it calls :meth:`Desk.saw`
  for each record it shows (the judge needs to know what was read);
- ``def <auth tool>(self, **args) -> str``: returns the identity it found (the env locks it);
- ``def check_<write tool>(self, **args) -> (canonical args, rule or None)``: arguments checked
  and written one canonical way, and the policy rule the change breaks (None: allowed);
- ``def apply_<write tool>(self, **args) -> str``: the change itself, given canonical args; the
  task generator applies the same methods to build the goal database.

A wrong argument raises :class:`ToolError` (feedback, the episode goes on); reading a record
of someone other than the authenticated user raises :class:`PrivacyError` (the episode ends
with reward 0).
"""
from __future__ import annotations

from typing import Any

from .calls import Call
from .db import Database


class ToolError(Exception):
    """A call that cannot be applied; ``invalid``: its arguments are wrong (else an id is unknown)."""

    def __init__(self, text: str, invalid: bool = False) -> None:
        super().__init__(text)
        self.text, self.invalid = text, invalid


class PrivacyError(Exception):
    """The call would show data of someone other than the authenticated user."""


class Desk:
    def __init__(self, db: Database) -> None:
        self.db = db
        #: The authenticated user (None until the auth tool found one); locked once set.
        self.identity: str | None = None
        self.reads: set[str] = set()

    def saw(self, record: str) -> None:
        self.reads.add(record)

    def require_identity(self) -> str:
        if self.identity is None:
            raise ToolError("Authenticate the user first (the identification tool), then look up their records.")
        return self.identity

    def identify_by_email(self, records, email: str, key: str) -> str:
        """An ``auth`` tool's work when people sign in by email: the one record of *records* with that
        ``email`` becomes the identity (its field *key*)."""
        found = [r for r in records if r.email == email.strip().lower()]
        if not found:
            raise ToolError(f"No one with email {email[:80]}. Ask them to check it.")
        self.identity = getattr(found[0], key)
        return f"Identified {found[0].name} ({self.identity})."

    def run(self, call: Call) -> str:
        return getattr(self, call.tool)(**call.args)

    def check(self, call: Call) -> tuple[dict[str, Any], str | None]:
        return getattr(self, f"check_{call.tool}")(**call.args)

    def apply(self, tool: str, args: dict[str, Any]) -> str:
        return getattr(self, f"apply_{tool}")(**args)
