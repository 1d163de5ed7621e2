"""The service envs (ecommerce, office, projects) against agents that try to game them.

    python bench/service_agents.py                         # the three envs, test split, in-process
    python bench/service_agents.py --envs office --split ood --http

Agents (the gaming ones written from the env's README and instruction, as an outsider would):

- ``expert``: the env's scripted expert (``agentgym_env_<env>.agents.ExpertAgent``);
- ``random``: a uniformly random tool of the instruction's list, arguments drawn from words and
  ids seen in the observations (a random whole number for integer arguments);
- ``refuse``: asks for everything at once (email, name, zip, ids), authenticates with what it
  got, looks at the first record it can name, refuses twice ("I'm sorry, I cannot do that"),
  then ``transfer_to_human``: what doing nothing scores;
- ``act``: acts without asking: the expert's own writes with every confirmation question
  dropped, an upper bound on any agent that acts without asking (it knows the right change);
- ``misdescribe``: the expert whose confirmation describes another change (an extra action,
  a blanket "may I go ahead?", another record), acting whatever the answer;
- ``lister`` (ecommerce): the expert, but it tells every amount as a list of 41 amounts a cent
  apart around the right one (a list of many amounts states none); scored on the tasks that
  ask for an amount.

Prints a Markdown table (success per agent, actions per episode) for docs/BENCHMARKS.md.
``--health`` instead serves each env and times ``GET /health`` (polled every 5 ms from another
client) while one session steps the slowest actions found (hostile text at and beyond the
length cap, deep nesting, a JSON call inside a 900 KB body).
"""
from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import platform
import random
import re
import statistics
import time
from datetime import datetime, timezone

ENVS = {"ecommerce": "ECommerceServiceEnv", "office": "OfficeEnv", "projects": "ProjectsEnv"}
AUTH = {"ecommerce": "find_customer", "office": "identify", "projects": "identify"}
#: The first read each README documents, and how its argument looks in a user's answer.
READ = {"ecommerce": ("get_order", "order_id", r"#W\d{4}"), "office": ("list_meetings", None, None),
        "projects": ("get_project", "project_id", r"\bP\d\b")}
ASK_ALL = ("Hello! To help you, please give me your email, your name and zip code, the order id, the project id, "
           "which meeting, which requirement and which task it is about?")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


def call(tool: str, **args) -> str:
    return f"{tool}({', '.join(f'{k}={json.dumps(v)}' for k, v in args.items())})"


class Refuser:
    def __init__(self, env: str) -> None:
        self.env, self.said, self.step, self.refusals = env, "", 0, 0

    def __call__(self, obs: str) -> str:
        self.step += 1
        if obs.split(":", 1)[0] in ("Customer", "Colleague", "Manager"):
            self.said += " " + obs
        if self.step == 1:
            return call("respond", message=ASK_ALL)
        if self.step == 2:
            email = _EMAIL.search(self.said)
            if email:
                return call(AUTH[self.env], email=email.group(0).rstrip("."))
            name, zip_code = re.search(r"(?:I'm|name is|This is) ([A-Z]\w+ [A-Z]\w+)", self.said), re.search(r"\b\d{5}\b", self.said)
            if name and zip_code:
                return call(AUTH[self.env], name=name.group(1), zip=zip_code.group(0))
        tool, arg, pattern = READ[self.env]
        if self.step == 3:
            found = re.search(pattern, self.said) if pattern else None
            if arg is None or found:
                return call(tool, **({arg: found.group(0)} if arg else {}))
        if self.refusals < 2:
            self.refusals += 1
            return call("respond", message="I'm sorry, but I cannot do that: our policy does not allow it.")
        return call("transfer_to_human", summary="The user's request could not be handled.")


class RandomAgent:
    def __init__(self, tools: list[dict], rng: random.Random) -> None:
        self.tools, self.rng, self.words = tools, rng, ["hello"]

    def __call__(self, obs: str) -> str:
        self.words += re.findall(r"[#\w.@-]{2,}", obs)[:200]
        tool = self.rng.choice(self.tools)["function"]
        args = {}
        for name, spec in tool["parameters"]["properties"].items():
            if spec["type"] == "integer":
                args[name] = self.rng.randint(1, 10)
            elif spec["type"] == "array":
                args[name] = [self.rng.choice(self.words)]
            else:
                args[name] = self.rng.choice(spec.get("enum") or self.words)
        return call(tool["name"], **args)


def agents(env: str, env_obj) -> dict:
    mod = importlib.import_module(f"agentgym_env_{env}.agents")
    tools = env_obj.describe()["tools"]

    class Act(mod.ExpertAgent):
        def __call__(self, obs: str) -> str:
            self.confirmed = True  # never asks
            return super().__call__(obs)

    out = {"expert": lambda t: mod.ExpertAgent(), "random": lambda t: RandomAgent(tools, random.Random(t)),
           "refuse": lambda t: Refuser(env), "act": lambda t: Act(), "misdescribe": lambda t: mod.MisdescribingExpert(t)}
    if env == "ecommerce":
        class Lister(mod.ExpertAgent):
            def __call__(self, obs: str) -> str:
                action = super().__call__(obs)
                return re.sub(r"\$(\d+\.\d\d)", lambda m: "one of " + " ".join(
                    f"${c / 100:.2f}" for c in range(max(0, int(float(m.group(1)) * 100) - 20),
                                                     int(float(m.group(1)) * 100) + 21)), action)
        out["lister"] = lambda t: Lister()
    return out


def _tells_amount(env, task_id: int) -> bool:
    """Whether the task asks for an amount (the lister is scored on those tasks only)."""
    env.reset(task_id=task_id)
    return any(o.kind == "amount" for r in env.task.goal.requests for o in r.outputs)


def measure(env: str, split: str, http: bool) -> list[dict]:
    from agentgym_core.env.client import HTTPEnvPool
    from agentgym_core.env.launcher import EnvLauncher
    from agentgym_service.play import play, play_pool

    cls = getattr(importlib.import_module(f"agentgym_env_{env}.env"), ENVS[env])
    env_obj = cls()
    ids = list(env_obj.splits()[split])
    rows = []
    for name, make in agents(env, env_obj).items():
        start = time.perf_counter()
        tasks = [t for t in ids if name != "lister" or _tells_amount(env_obj, t)]
        results = {t: play(env_obj, t, make(t))[:2] for t in tasks}
        secs = time.perf_counter() - start
        turns = statistics.mean(info["turns"] for _, info in results.values())
        rows.append({"env": env, "agent": name, "mode": "in-process", "tasks": len(tasks), "secs": secs, "turns": turns,
                     "success": statistics.mean(r for r, _ in results.values())})
    if http:
        async def run(urls):
            async with HTTPEnvPool(urls) as pool:
                return await play_pool(pool, ids, agents(env, env_obj)["expert"], concurrency=16)
        with EnvLauncher(env, startup_timeout=90) as launcher:
            start = time.perf_counter()
            results = asyncio.run(run(launcher.urls))
            secs = time.perf_counter() - start
        rows.append({"env": env, "agent": "expert", "mode": "http (16 sessions)", "tasks": len(ids), "secs": secs,
                     "turns": statistics.mean(i["turns"] for _, i in results.values()),
                     "success": statistics.mean(r for r, _ in results.values())})
    return rows


SLOW = {"cap": "respond(" + "(" * 3990 + ")", "over cap": "x" * 900_000, "nested": "[" * 3999,
        "json": '{"name": "respond", "arguments": {"message": "' + "a\\\"" * 1300 + '"}}'}


def health(env: str) -> list[dict]:
    import threading

    import httpx
    from agentgym_core.env.launcher import EnvLauncher

    rows = []
    with EnvLauncher(env, startup_timeout=90) as launcher, httpx.Client(base_url=launcher.urls[0], timeout=60) as http:
        sid = http.post("/create").json()["id"]
        http.post("/reset", json={"id": sid, "data_idx": 1})
        for label, action in SLOW.items():
            times: list[float] = []
            stop = threading.Event()

            def poll(stop: threading.Event = stop, times: list[float] = times) -> None:
                with httpx.Client(base_url=launcher.urls[0], timeout=60) as side:
                    while not stop.is_set():
                        t0 = time.perf_counter()
                        side.get("/health")
                        times.append(time.perf_counter() - t0)
                        time.sleep(0.005)

            watcher = threading.Thread(target=poll)
            watcher.start()
            time.sleep(0.05)
            steps = []
            for _ in range(20):
                t0 = time.perf_counter()
                http.post("/step", json={"id": sid, "action": action})
                steps.append(time.perf_counter() - t0)
            stop.set()
            watcher.join()
            rows.append({"env": env, "action": label, "chars": len(action), "step_ms": 1000 * max(steps),
                         "health_max_ms": 1000 * max(times), "health_p50_ms": 1000 * statistics.median(times)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", default=",".join(ENVS))
    parser.add_argument("--split", default="test")
    parser.add_argument("--http", action="store_true", help="also the expert over HTTP (one server, 16 sessions)")
    parser.add_argument("--health", action="store_true", help="time /health during the slowest steps instead")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    if args.health:
        rows = [r for env in args.envs.split(",") for r in health(env)]
        print(f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} CPUs, load average {load:.1f} -> "
              f"{os.getloadavg()[0]:.1f}. Command: `python bench/service_agents.py --health`\n")
        print("| env | action | chars | slowest step ms (of 20) | /health p50 ms | /health max ms |")
        print("|---|---|---:|---:|---:|---:|")
        for r in rows:
            print(f"| {r['env']} | {r['action']} | {r['chars']} | {r['step_ms']:.1f} | {r['health_p50_ms']:.1f} | "
                  f"{r['health_max_ms']:.1f} |")
        return
    rows = [r for env in args.envs.split(",") for r in measure(env, args.split, args.http)]
    print(f"{args.split} split, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.node() or '?'}, "
          f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, load average "
          f"{load:.1f} -> {os.getloadavg()[0]:.1f}. Command: `python bench/service_agents.py "
          f"{' '.join(os.sys.argv[1:])}`".replace(" `", "`") + "\n")
    print("| env | agent | mode | tasks | success | actions/episode | episodes/s |")
    print("|---|---|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['env']} | {r['agent']} | {r['mode']} | {r['tasks']} | {r['success']:.1%} | {r['turns']:.1f} | "
              f"{r['tasks'] / r['secs']:.0f} |")


if __name__ == "__main__":
    main()
