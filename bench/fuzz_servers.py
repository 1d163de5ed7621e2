"""Fuzz every shipped env's HTTP server from its own OpenAPI document (schemathesis), one server per env.

    python bench/fuzz_servers.py                          # all nine envs, 15 examples per operation and mode
    python bench/fuzz_servers.py --envs babyai,ecommerce --examples 50

For each env: ``agentgym env serve`` (through :class:`~agentgym_core.env.launcher.EnvLauncher`), four live
sessions reset on the env's first test task (so small generated ids hit real ones), then every operation of
``GET /openapi.json`` with schema-conforming (positive) and schema-violating (negative) requests. Checks:
no 5xx and a JSON content type on every answer; for positive requests also a documented status code and a
body that conforms to the response schema (``/batch`` answers 200 with per-op statuses); negative ones must be
refused. (``st run --checks all``, which CI runs per env in tests/robustness/test_robust_fuzz_envs.py, adds
the stateful and coverage phases.) Afterwards the
same process must still be alive, answer ``/health`` and play a reset and a step. Prints a Markdown table
for docs/BENCHMARKS.md; exits 1 if any env has a failure. The CI test (tests/robustness/test_robust_fuzz_http.py)
runs the same checks on a toy env; this runs them on the real ones.
"""
from __future__ import annotations

import argparse
import collections
import os
import platform
import sys
import time
from datetime import datetime, timezone

import httpx

ENVS = ("babyai", "textcraft", "sciworld", "searchqa", "webnav", "codefix", "ecommerce", "office", "projects")


def first_task(url: str) -> int:
    splits = httpx.get(f"{url}/tasks", timeout=60).json()["splits"]
    ids = splits.get("test") or next(iter(splits.values()))
    return ids["range"][0] if isinstance(ids, dict) else ids[0]


def _fuzzer(operation, mode: str, checks: list, url: str, examples: int, row: dict):
    """A hypothesis test of *operation* in *mode* that records each check failure in *row* and goes on."""
    from hypothesis import HealthCheck, given, settings
    from schemathesis import GenerationMode

    @given(case=operation.as_strategy(generation_mode=GenerationMode(mode)))
    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    def fuzz(case):
        response = case.call(base_url=url, timeout=300)
        row["requests"] += 1
        if response.status_code >= 500:
            row["5xx"] += 1
        try:
            case.validate_response(response, checks=checks)
        except Exception as exc:  # noqa: BLE001 - every check failure is recorded, then the next case
            first = str(exc).strip().splitlines()
            key = f"{mode} {operation.method.upper()} {operation.path}: {first[0][:90] if first else type(exc).__name__}"
            row["failures"][key] += 1

    return fuzz


def fuzz_env(name: str, examples: int) -> dict:
    import schemathesis
    from hypothesis.errors import Unsatisfiable
    from schemathesis.checks import (content_type_conformance, negative_data_rejection, not_a_server_error,
                                     response_schema_conformance, status_code_conformance)

    from agentgym_core.env.launcher import EnvLauncher

    row = {"env": name, "requests": 0, "5xx": 0, "failures": collections.Counter(), "operations": 0, "after": "?"}
    start = time.perf_counter()
    with EnvLauncher(name, ttl=0, startup_timeout=300) as launcher:
        url = launcher.urls[0]
        task = first_task(url)
        for _ in range(4):
            sid = httpx.post(f"{url}/create", timeout=60).json()["id"]
            httpx.post(f"{url}/reset", json={"id": sid, "data_idx": task}, timeout=300)
        schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
        operations = [result.ok() for result in schema.get_all_operations()]
        row["operations"] = len(operations)
        for mode in ("positive", "negative"):
            checks = [not_a_server_error, content_type_conformance]
            if mode == "positive":
                checks += [status_code_conformance, response_schema_conformance]
            else:  # what the schema forbids is refused (4xx), not run
                checks += [negative_data_rejection]
            for operation in operations:
                fuzz = _fuzzer(operation, mode, checks, url, examples, row)
                try:
                    fuzz()
                except Unsatisfiable:  # negative mode: an operation without inputs cannot be made invalid
                    pass
        alive = launcher.alive() == [True]
        health = httpx.get(f"{url}/health", timeout=60).json().get("status")
        sid = httpx.post(f"{url}/create", timeout=60).json()["id"]
        reset = httpx.post(f"{url}/reset", json={"id": sid, "data_idx": task}, timeout=300).status_code
        step = httpx.post(f"{url}/step", json={"id": sid, "action": "look"}, timeout=300).status_code
        row["after"] = "ok" if alive and health == "ok" and reset == 200 and step == 200 else \
            f"alive {alive}, health {health}, reset {reset}, step {step}"
    row["secs"] = time.perf_counter() - start
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", default=",".join(ENVS))
    parser.add_argument("--examples", type=int, default=15, help="hypothesis examples per operation and mode")
    args = parser.parse_args()
    load0, t0 = os.getloadavg()[0], time.perf_counter()
    rows = []
    for name in args.envs.split(","):
        row = fuzz_env(name, args.examples)
        rows.append(row)
        print(f"[{name}] {row['requests']} requests, {row['5xx']} 5xx, {sum(row['failures'].values())} check failures, "
              f"after: {row['after']}, {row['secs']:.0f} s", file=sys.stderr)
        for key, n in row["failures"].most_common(5):
            print(f"    {n} x {key}", file=sys.stderr)
    print(f"\n{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.node() or '?'}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}, load average {load0:.1f} -> {os.getloadavg()[0]:.1f}, "
          f"{time.perf_counter() - t0:.0f} s. Command: `python bench/fuzz_servers.py {' '.join(sys.argv[1:])}`\n")
    print("| env | operations | requests | 5xx | check failures | after fuzzing | seconds |")
    print("|---|---:|---:|---:|---:|---|---:|")
    for r in rows:
        print(f"| {r['env']} | {r['operations']} | {r['requests']} | {r['5xx']} | {sum(r['failures'].values())} | "
              f"{r['after']} | {r['secs']:.0f} |")
    sys.exit(1 if any(r["5xx"] or r["failures"] or r["after"] != "ok" for r in rows) else 0)


if __name__ == "__main__":
    main()
