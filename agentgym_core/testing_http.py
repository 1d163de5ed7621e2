"""``play_over_http``: one episode of a task through a real env server, as a wire-format client plays it.

Part of the testing kit (:mod:`agentgym_core.testing` re-exports it); needs ``httpx`` only when called.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class HTTPTranscript:
    """What :func:`play_over_http` saw: the server's answers, in order."""

    url: str
    info: dict[str, Any]
    reset: dict[str, Any]
    invalid: dict[str, Any] | None = None
    steps: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @property
    def first_observation(self) -> str:
        return self.reset["observation"]

    @property
    def last(self) -> dict[str, Any]:
        return self.steps[-1][1] if self.steps else self.reset

    @property
    def success(self) -> bool:
        return bool(self.last.get("done")) and bool((self.last.get("info") or {}).get("success"))


def play_over_http(
    server: str,
    task_id: int,
    actions: Iterable[str] | Callable[[str], str | None],
    *,
    options: dict[str, Any] | None = None,
    invalid_action: str | None = None,
    invalid_hint: str | None = None,
    expect_success: bool = True,
    max_steps: int = 100,
    token: str | None = None,
    timeout: float = 60.0,
) -> HTTPTranscript:
    """Play task *task_id* to its end through an env server, as a client of the wire format would.

    *server* is a URL, or an env name (or import string) to serve with ``agentgym env serve``
    (with *options*) for this call. Then: ``GET /info``, ``POST /create``, ``POST /reset``;
    if *invalid_action* is given, it is sent first and must come back ``invalid_action``, not
    done, with *invalid_hint* in its observation; then *actions* are stepped with ``seq``
    numbers (a list, or a policy called with the latest observation; None stops), until done.
    Finally ``GET /observation`` must equal the last observation and ``POST /close`` succeed.
    Raises ``AssertionError`` naming what broke; with *expect_success*, also if the episode
    did not end in success. Returns the :class:`HTTPTranscript` for further checks.
    """
    import httpx

    with contextlib.ExitStack() as stack:
        if server.startswith(("http://", "https://")):
            url = server
        else:
            from .env.launcher import EnvLauncher

            url = stack.enter_context(EnvLauncher(server, options=options, token=token)).urls[0]
        headers = {"authorization": f"Bearer {token}"} if token else {}
        http = stack.enter_context(httpx.Client(base_url=url, timeout=timeout, headers=headers))

        def call(method: str, path: str, **kwargs: Any) -> Any:
            reply = http.request(method, path, **kwargs)
            assert reply.status_code == 200, (
                f"{method} {path} {kwargs.get('json', '')} answered {reply.status_code}: {reply.text[:500]}")
            return reply.json()

        info = call("GET", "/info")
        sid = call("POST", "/create")["id"]
        try:
            script = HTTPTranscript(url, info, call("POST", "/reset", json={"id": sid, "data_idx": int(task_id)}))
            _play(script, lambda action, seq: call("POST", "/step", json={"id": sid, "action": action, "seq": seq}),
                  actions, invalid_action, invalid_hint, max_steps)
            latest = script.steps[-1][1] if script.steps else (script.invalid or script.reset)
            assert call("GET", "/observation", params={"id": sid}) == latest["observation"], (
                "GET /observation is not the latest observation")
        finally:  # also when a check failed: leave no session behind
            closed = http.post("/close", json={"id": sid})
        assert closed.status_code == 200, f"POST /close answered {closed.status_code}: {closed.text[:500]}"
    if expect_success:
        assert script.success, (f"task {task_id} did not end in success after {len(script.steps)} steps "
                                f"({[a for a, _ in script.steps]}); last answer: {script.last}")
    return script


def _play(script: HTTPTranscript, step: Callable[[str, int], dict[str, Any]],
          actions: Iterable[str] | Callable[[str], str | None], invalid_action: str | None,
          invalid_hint: str | None, max_steps: int) -> None:
    """The steps of :func:`play_over_http`, recorded into *script*."""
    seq = 0
    if invalid_action is not None:
        seq += 1
        script.invalid = bad = step(invalid_action, seq)
        assert (bad.get("info") or {}).get("invalid_action") is True and bad["done"] is False, (
            f"invalid action {invalid_action!r} should be answered with info.invalid_action and done false, got {bad}")
        assert invalid_hint is None or invalid_hint in bad["observation"], (
            f"the answer to invalid action {invalid_action!r} should say {invalid_hint!r}:\n{bad['observation']}")
    if callable(actions):
        policy = actions
    else:
        remaining = iter(actions)

        def policy(_observation: str) -> str | None:
            return next(remaining, None)
    observation = script.first_observation  # an invalid action leaves the episode as it was
    while len(script.steps) < max_steps and not script.last.get("done"):
        action = policy(observation)
        if action is None:
            break
        seq += 1
        answer = step(action, seq)
        script.steps.append((action, answer))
        observation = answer["observation"]
