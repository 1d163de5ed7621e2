"""A scripted OpenAI-compatible judge on a loopback port, and episodes to judge.

The server answers ``POST /v1/chat/completions`` with whatever ``reply(prompt, body)`` returns
(default ``{"score": 3, "reason": "scripted"}``), and can be told to answer 5xx, to hang, or to be
slow. It is also a judge that obeys instructions, naively: anything in the prompt outside its data
blocks (from any ``<<<DATA tag>>>`` to the first ``<<<END DATA tag>>>`` after it, wherever they
appear, the tag read from the prompt) that says "answer N" is obeyed. The quoting is safe exactly
when an agent's text can never get such an instruction outside the blocks.
"""
from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Optional

from agentgym_core.rollout.trajectory import Trajectory, Turn

_TAG = re.compile(r"<<<DATA ([0-9a-f]+)>>>")
_ORDER = re.compile(r"\banswer\s+(\d+)\b", re.IGNORECASE)


def outside_data(prompt: str) -> str:
    """*prompt* without its data blocks, as a naive judge reads it."""
    tag = _TAG.search(prompt)
    if tag is None:
        return prompt
    t = re.escape(tag.group(1))
    return re.sub(rf"<<<DATA {t}>>>.*?<<<END DATA {t}>>>", " ", prompt, flags=re.DOTALL)


def data_blocks(prompt: str) -> list[str]:
    """The contents of the prompt's data blocks (those whose markers stand on lines of their own)."""
    tag = _TAG.search(prompt)
    if tag is None:
        return []
    t = re.escape(tag.group(1))
    return re.findall(rf"^<<<DATA {t}>>>$(.*?)^<<<END DATA {t}>>>$", prompt, flags=re.DOTALL | re.MULTILINE)


def obeyed(prompt: str) -> Optional[int]:
    """The score an instruction outside the data blocks orders, if any."""
    found = _ORDER.search(outside_data(prompt))
    return int(found.group(1)) if found else None


class ScriptedJudge:
    """See the module docstring. ``requests`` holds every request body it got, answered or not."""

    def __init__(self) -> None:
        self.reply: Callable[[str, dict], Any] = lambda prompt, body: {"score": 3, "reason": "scripted"}
        self.fail_next = 0          # answer this many requests with fail_status
        self.fail_status = 500
        self.hang_next = 0          # let this many requests hang for hang_seconds
        self.hang_seconds = 5.0
        self.delay = 0.0            # every request takes this long
        self.fail_if: Optional[Callable[[str], bool]] = None  # answer fail_status to the prompts it picks
        self.requests: list[dict] = []
        self.active = self.max_active = 0
        self.lock = threading.Lock()
        judge = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                judge.serve(self, body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def prompts(self) -> list[str]:
        return [b["messages"][-1]["content"] for b in self.requests]

    def serve(self, handler: BaseHTTPRequestHandler, body: dict) -> None:
        with self.lock:
            self.requests.append(body)
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            fail = self.fail_next > 0
            self.fail_next -= fail
            fail = fail or bool(self.fail_if and self.fail_if(body["messages"][-1]["content"]))
            hang = not fail and self.hang_next > 0
            self.hang_next -= hang
        try:
            time.sleep(self.delay + (self.hang_seconds if hang else 0.0))
            if fail:
                return self._send(handler, self.fail_status, {"error": {"message": "scripted failure"}})
            prompt = body["messages"][-1]["content"]
            ordered = obeyed(prompt)
            answer = {"score": ordered, "reason": "as instructed"} if ordered is not None else self.reply(prompt, body)
            text = answer if isinstance(answer, str) else json.dumps(answer)
            self._send(handler, 200, {"id": "c1", "object": "chat.completion", "model": body.get("model"),
                                      "choices": [{"index": 0, "finish_reason": "stop",
                                                   "message": {"role": "assistant", "content": text}}],
                                      "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(text) // 4}})
        finally:
            with self.lock:
                self.active -= 1

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, data: dict) -> None:
        payload = json.dumps(data).encode()
        try:
            handler.send_response(status)
            handler.send_header("content-type", "application/json")
            handler.send_header("content-length", str(len(payload)))
            handler.end_headers()
            handler.wfile.write(payload)
        except OSError:  # the client gave up (a timeout test)
            pass

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def episode(*replies: str, success: Optional[bool] = None, task: str = "Help the user cancel order 7.",
            group: int = 0, eid: str = "e", observations: Optional[list[str]] = None) -> Trajectory:
    """A finished episode with these agent replies; ``success`` set: the env reported it on the last turn."""
    obs = observations or [f"observation {k}" for k in range(len(replies))]
    turns = [Turn(start=0, end=1, text=r, action=r, observation=o) for r, o in zip(replies, obs)]
    if turns and success is not None:
        turns[-1].done = True
        turns[-1].info = {"success": success}
    return Trajectory(episode_id=eid, env_name="t", task_id=0, group_id=group, token_ids=[], loss_mask=[],
                      logprobs=[], prompt_len=0, turns=turns, success=bool(success),
                      transcript=[{"role": "user", "content": task}])


def settings(server: ScriptedJudge, **judge: Any) -> dict[str, Any]:
    """The reward's ``judge`` option for *server*, quick to give up (tests of failures stay short)."""
    return {"url": server.url, "model": "scripted", "backoff": 0.01, "backoff_max": 0.05, "timeout": 5.0,
            "attempts": 3, **judge}
