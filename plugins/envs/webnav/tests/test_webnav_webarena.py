"""WebArena mode against a small site on a loopback HTTP server: the same rendering and
actions, WebArena task configs, ``goto``/``go_back``/``stop`` and the deterministic checks.
(No real WebArena deployment is reachable here; this drives the identical code path.)"""
from __future__ import annotations

import functools
import json
import os
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agentgym_core.errors import ConfigError
from agentgym_env_webnav.browser import BrowserNotFound, find_binaries
from agentgym_env_webnav.env import WebNavEnv
from agentgym_env_webnav.solver import parse_observation

SITE = {
    "index.html": "<html><head><title>Shop</title></head><body><h1>Shop</h1>"
                  "<a href='item.html?id=7'>Blue shirt</a> <a href='about.html'>About</a>"
                  "<form action='search.html'><input name='q' placeholder='Search'><button>Go</button></form></body></html>",
    "item.html": "<html><head><title>Blue shirt</title></head><body><p>Blue shirt</p><p>Price: $12.50</p></body></html>",
    "about.html": "<html><head><title>About</title></head><body><p>We sell shirts.</p></body></html>",
    "search.html": "<html><head><title>Results</title></head><body><p>No results.</p></body></html>",
}
TASKS = [
    {"task_id": 0, "sites": ["shopping"], "intent": "What is the price of the blue shirt?",
     "start_url": "__SHOPPING__/index.html",
     "eval": {"eval_types": ["string_match"], "reference_answers": {"must_include": ["12.50"]}}},
    {"task_id": 1, "sites": ["shopping"], "intent": "Search the shop for socks.",
     "start_url": "__SHOPPING__/index.html",
     "eval": {"eval_types": ["url_match"], "reference_url": "__SHOPPING__/search.html?q=socks"}},
    {"task_id": 2, "sites": ["shopping"], "intent": "Is the shop good?", "start_url": "/index.html",
     "eval": {"eval_types": ["string_match"], "reference_answers": {"fuzzy_match": ["yes"]}}},
]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    for name, html in SITE.items():
        (root / name).write_text(html)
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    tasks = root / "tasks.json"
    tasks.write_text(json.dumps(TASKS))
    yield f"http://127.0.0.1:{server.server_address[1]}", str(tasks)
    server.shutdown()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def test_webarena_mode_needs_its_config():
    with pytest.raises(ConfigError, match="env.task_file is required"):
        WebNavEnv(mode="webarena", base_url="http://127.0.0.1:9")
    with pytest.raises(ConfigError, match="needs env.base_url or env.sites"):
        WebNavEnv(mode="webarena", task_file="tasks.json")


@pytest.mark.slow
def test_webarena_mode_plays_a_local_site(site):
    try:
        find_binaries()
    except BrowserNotFound as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"needs Chromium: {exc}")
    base, task_file = site
    env = WebNavEnv(mode="webarena", base_url=base, sites={"__SHOPPING__": base}, task_file=task_file, max_steps=5)
    try:
        assert "stop [answer]" in env.instruction and env.category(0) == "shopping"
        obs = env.reset(task_id=0)
        assert obs.startswith("Task: What is the price") and "Title: Shop" in obs
        _, els = parse_observation(obs)
        link = next(e for e in els if e.role == "link" and e.text == "Blue shirt")
        obs, reward, done, _ = env.step(f"click [{link.id}]")
        assert not done and "Price: $12.50" in obs and "item.html?id=7" in obs
        obs, reward, done, info = env.step("stop [It costs $12.50]")
        assert done and reward == 1.0 and info["success"]

        env.reset(task_id=0)
        obs, reward, done, info = env.step("stop [I don't know]")
        assert done and reward == 0.0 and not info["success"]

        obs = env.reset(task_id=1)
        box = next(e for e in parse_observation(obs)[1] if e.role == "textbox")
        obs, _, done, _ = env.step(f"type [{box.id}] [socks]")
        assert not done and 'value="socks"' in obs
        obs, _, done, _ = env.step("press [Enter]")
        assert "Title: Results" in obs
        obs, reward, done, info = env.step("stop")
        assert done and reward == 1.0

        env.reset(task_id=1)
        env.step("goto [__SHOPPING__/about.html]")
        obs, _, _, _ = env.step("go_back")
        assert "Title: Shop" in obs
        obs, _, _, info = env.step("goto []")
        assert info["invalid_action"] and "goto needs a URL" in obs
        for _ in range(2):
            obs, reward, done, info = env.step("scroll [down]")
        assert done and reward == 0.0 and "step limit" in info["reason"]

        env.reset(task_id=2)  # relative start_url, and a check we cannot run offline
        obs, reward, done, info = env.step("stop [yes]")
        assert done and reward == 0.0 and info["unsupported"] == ["string_match.fuzzy_match (needs an LLM judge)"]
    finally:
        env.close()
