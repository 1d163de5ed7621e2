"""``GET /health`` latency while parallel maximal ``POST /batch`` requests run on one env server.

    python bench/batch_health.py                            # ecommerce, 4 parallel batches at the caps, 20 s
    python bench/batch_health.py --env babyai --seconds 10
    python bench/batch_health.py --serve-args=--fixed-workers   # all 64 threads at once (as before)
    python bench/batch_health.py --env babyai --parallel 1 --sessions 1 --ops 15500 --bytes 980000 \
        --serve-args="--max-batch-ops 20000"                # the issue's one huge batch (the op cap raised)

One server (``agentgym env serve``, through :class:`~agentgym_core.env.launcher.EnvLauncher`;
``--url`` measures a running one instead); ``--parallel`` clients each send batches of step ops
over ``--sessions`` sessions of their own, back to back for ``--seconds``, while another client
polls ``/health`` every 5 ms (first ``--idle-seconds`` alone, for the machine's own noise). A batch
holds the server's op cap of ops (``max_batch_ops`` in ``/health``) with actions padded so the
body is just under its byte cap (``max_batch_bytes``; the service envs' actions stop at 3,999
characters); ``--ops``/``--bytes`` override both (a server from before the caps advertises
neither: 256 ops, 1 MiB). A session whose episode ended is reset by the first op of it in the
next batch. Prints a Markdown table for docs/BENCHMARKS.md (target: ``/health`` under 100 ms).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import sys
import threading
import time
from datetime import datetime, timezone

import httpx

from agentgym_core.env.launcher import EnvLauncher

#: A step action per env that keeps an episode going; "{pad}" is filled to reach the byte target.
ACTIONS = {
    "ecommerce": 'respond(message="Could you tell me the status of my order, please? {pad}")',
    "office": 'respond(message="Could you tell me when you are free, please? {pad}")',
    "projects": 'respond(message="Could you tell me which issue you mean, please? {pad}")',
    "babyai": "turn left{pad}",
}
WORDS = "please look at my last order and tell me what happened to it "
#: The longest action an env parses (the service envs' ``max_action_chars`` is 4000): no padding beyond it.
ACTION_CHARS = {"ecommerce": 3999, "office": 3999, "projects": 3999}


class Launcher(EnvLauncher):
    """An :class:`EnvLauncher` whose servers get extra ``agentgym env serve`` flags."""

    def __init__(self, name: str, extra: list[str], **kwargs) -> None:
        super().__init__(name, **kwargs)
        self.extra = extra

    def command(self) -> list[str]:
        return super().command() + self.extra


def task_ids(http: httpx.Client) -> list[int]:
    listing = http.get("/tasks").json()["splits"]
    ids = next(iter(listing.values()))
    return list(range(*ids["range"])) if isinstance(ids, dict) else list(ids)


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


class Stream:
    """One client sending batches of step ops over its own sessions, back to back."""

    def __init__(self, url: str, sessions: list[int], tasks: list[int], ops: int, action: str) -> None:
        self.url, self.sessions, self.tasks, self.ops, self.action = url, sessions, tasks, ops, action
        self.times: list[float] = []
        self.statuses: dict[int, int] = {}
        self.resets = 0
        self.error: str | None = None
        self._ended: set[int] = set()
        self._next_task = 0

    def body(self) -> bytes:
        ops, seen = [], set()
        for k in range(self.ops):
            sid = self.sessions[k % len(self.sessions)]
            if sid in self._ended and sid not in seen:  # the episode ended: start another first
                ops.append({"op": "reset", "id": sid, "data_idx": self.tasks[self._next_task % len(self.tasks)]})
                self._next_task += 1
                self.resets += 1
            else:
                ops.append({"op": "step", "id": sid, "action": self.action})
            seen.add(sid)
        self._ended.clear()
        return json.dumps({"ops": ops}, separators=(",", ":")).encode()

    def run(self, deadline: float) -> None:
        with httpx.Client(base_url=self.url, timeout=120, headers={"content-type": "application/json"}) as http:
            while time.monotonic() < deadline:
                content = self.body()
                t0 = time.perf_counter()
                resp = http.post("/batch", content=content)
                self.times.append(time.perf_counter() - t0)
                if resp.status_code != 200:
                    self.error = f"POST /batch answered {resp.status_code}: {resp.text[:300]}"
                    return
                for i, result in enumerate(resp.json()["results"]):
                    sid = self.sessions[i % len(self.sessions)]
                    self.statuses[result["status"]] = self.statuses.get(result["status"], 0) + 1
                    if result["status"] != 200 or result["body"].get("done"):
                        self._ended.add(sid)


def poll_health(url: str, stop: threading.Event, times: list[float], at_once: list[int] | None = None) -> None:
    """``GET /health`` every 5 ms until *stop*: each one's latency, and the server's ``env_calls_at_once``."""
    with httpx.Client(base_url=url, timeout=60) as http:
        while not stop.is_set():
            t0 = time.perf_counter()
            resp = http.get("/health")
            times.append(time.perf_counter() - t0)
            resp.raise_for_status()
            if at_once is not None and "env_calls_at_once" in resp.json():
                at_once.append(resp.json()["env_calls_at_once"])
            time.sleep(0.005)


def padded_action(env: str, ops: int, cap: int, sessions: int) -> str:
    """The env's action padded so that a batch of *ops* steps is at most *cap* bytes."""
    template = ACTIONS.get(env, "{pad}")
    bare = [{"op": "step", "id": 10**6 + k % sessions, "action": template.format(pad="")} for k in range(ops)]
    spare = (cap - len(json.dumps({"ops": bare}, separators=(",", ":"))) - 16) // ops
    if spare < 0:
        raise SystemExit(f"{ops} ops of {template!r} do not fit in {cap} bytes; lower --ops or raise --bytes")
    spare = min(spare, ACTION_CHARS.get(env, 1 << 30) - len(template.format(pad="")))
    return template.format(pad=(WORDS * (spare // len(WORDS) + 1))[:spare])


def measure(args: argparse.Namespace) -> dict:
    launcher = None if args.url else Launcher(args.env, shlex.split(args.serve_args), startup_timeout=120).start()
    url = args.url or launcher.urls[0]
    try:
        return _measure(args, url)
    finally:
        if launcher is not None:
            launcher.stop()


def _measure(args: argparse.Namespace, url: str) -> dict:
    with httpx.Client(base_url=url, timeout=120) as http:
        health = http.get("/health").json()
        ops = args.ops or health.get("max_batch_ops", 256)
        cap = args.bytes or health.get("max_batch_bytes", 1 << 20)
        action = padded_action(args.env, ops, cap, args.sessions)
        tasks = task_ids(http)
        streams = []
        for p in range(args.parallel):
            sids = [http.post("/create").json()["id"] for _ in range(args.sessions)]
            for i, sid in enumerate(sids):
                http.post("/reset", json={"id": sid, "data_idx": tasks[(p * args.sessions + i) % len(tasks)]})
            streams.append(Stream(url, sids, tasks[p::args.parallel], ops, action))
        idle: list[float] = []
        stop = threading.Event()
        poller = threading.Thread(target=poll_health, args=(url, stop, idle))
        poller.start()
        time.sleep(args.idle_seconds)
        stop.set()
        poller.join()
        busy: list[float] = []
        at_once: list[int] = []
        stop = threading.Event()
        poller = threading.Thread(target=poll_health, args=(url, stop, busy, at_once))
        poller.start()
        deadline = time.monotonic() + args.seconds
        senders = [threading.Thread(target=s.run, args=(deadline,)) for s in streams]
        for t in senders:
            t.start()
        for t in senders:
            t.join()
        stop.set()
        poller.join()
        for s in streams:
            if s.error:
                raise SystemExit(s.error)
        size = len(streams[0].body())
    statuses: dict[int, int] = {}
    for s in streams:
        for code, n in s.statuses.items():
            statuses[code] = statuses.get(code, 0) + n
    batch = [t for s in streams for t in s.times]
    return {"ops": ops, "bytes": size, "batches": len(batch), "batch": batch, "idle": idle, "busy": busy,
            "statuses": statuses, "resets": sum(s.resets for s in streams),
            "at_once": f"{min(at_once)}-{max(at_once)} (median {statistics.median(at_once):g})" if at_once else "-"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="ecommerce")
    parser.add_argument("--parallel", type=int, default=4, help="batches in flight at once")
    parser.add_argument("--sessions", type=int, default=64, help="sessions per parallel client")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long the batches are sent")
    parser.add_argument("--idle-seconds", type=float, default=5.0, help="how long /health is polled before them")
    parser.add_argument("--ops", type=int, default=0, help="ops per batch (0: the server's cap)")
    parser.add_argument("--bytes", type=int, default=0, help="bytes per batch body (0: the server's cap)")
    parser.add_argument("--serve-args", default="", help="extra flags for agentgym env serve")
    parser.add_argument("--url", default="", help="a running server of --env to measure instead of serving one")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    r = measure(args)
    ms = [1000 * t for t in r["batch"]]
    idle, busy = [1000 * t for t in r["idle"]], [1000 * t for t in r["busy"]]
    print(f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.node() or '?'}, {platform.machine()}, "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}, load average {load:.1f} -> "
          f"{os.getloadavg()[0]:.1f}. Command: `python bench/batch_health.py {shlex.join(sys.argv[1:])}`".replace(
              " `", "`") + "\n")
    print(f"{args.parallel} parallel batches of {r['ops']} step ops ({r['bytes']:,} bytes) over "
          f"{args.sessions} sessions each, {args.env}, {args.seconds:g} s; op statuses {r['statuses']}, "
          f"{r['resets']} resets; env calls at once (the server's limit): {r['at_once']}\n")
    print("| load | batches | batch p50 ms | batch max ms | /health polls | /health p50 ms | /health p99 ms | "
          "/health max ms | /health > 100 ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| idle | - | - | - | {len(idle)} | {statistics.median(idle):.1f} | {percentile(idle, 0.99):.1f} | "
          f"{max(idle):.1f} | {sum(t > 100 for t in idle)} |")
    print(f"| {args.parallel} x {r['ops']} ops | {r['batches']} | {statistics.median(ms):.0f} | {max(ms):.0f} | "
          f"{len(busy)} | {statistics.median(busy):.1f} | {percentile(busy, 0.99):.1f} | {max(busy):.1f} | "
          f"{sum(t > 100 for t in busy)} |")


if __name__ == "__main__":
    main()
