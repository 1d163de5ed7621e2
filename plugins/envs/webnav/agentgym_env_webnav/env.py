"""``webnav``: MiniWoB++ web tasks in a headless Chromium, seen as text and driven by
``click [id]`` / ``type [id] [text]`` / ``select`` / ``press`` / ``scroll`` actions."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, List

from agentgym_core import BaseEnv, ConfigError, config_from

from . import page
from .browser import POOL
from .tasks import TASKS, TaskSet, available_tasks, html_dir

INSTRUCTION = """You are operating a web browser to complete a task on a web page.
Each observation starts with the task, then lists the visible page elements, one per line:
"[id] role "text" ..." (value=, checked/unchecked, options=[...] and focused where they apply;
indentation shows nesting). Act on elements by their id with exactly one action per turn:
  click [id]              click an element (buttons, links, checkboxes, tabs, text fields)
  type [id] [text]        replace the content of a text field with text
  select [id] [option]    choose an option of a drop-down list (combobox)
  press [key]             press a key in the focused element (enter, tab, escape, ...)
  scroll [up|down]        scroll the page
The episode ends when the page judges the task done (a positive reward means success).
Answer in the format:
Thought: <your reasoning>
Action: <one action>"""

WEBARENA_ACTIONS = """Also:
  goto [url]              open a URL
  go_back                 go back to the previous page
  stop [answer]           end the task, with your answer if the task asks a question"""

# MiniWoB's own HUD and sync cover are not part of the task; the query is shown as "Task:".
_MINIWOB_CHROME = ("reward-display", "sync-task-cover", "click-canvas", "query")


@dataclass
class WebNavConfig:
    """Options of the ``webnav`` env (the ``env:`` section of a run config)."""

    #: "miniwob" (bundled tasks, the default) or "webarena" (a deployment at ``base_url``).
    mode: str = "miniwob"
    #: MiniWoB task names; empty = the default set (``agentgym_env_webnav.tasks.TASKS``).
    tasks: List[str] = field(default_factory=list)
    #: Seeds per task in the train and test splits (ids = tasks x seeds).
    train_seeds: int = 1000
    test_seeds: int = 50
    #: "raw": MiniWoB's reward in [-1, 1]; "normalized": (raw + 1) / 2 in [0, 1].
    reward: str = "raw"
    #: MiniWoB's episode timer in seconds; 0 turns it off (an LLM thinks slower than 10 s).
    episode_time_s: float = 0.0
    #: Click with WebDriver pointer events instead of DOM clicks (slower; closer to a user).
    native_clicks: bool = False
    #: At most this many elements are listed per observation.
    max_elements: int = 200
    #: Browser binaries; empty = $AGENTGYM_CHROMIUM / $AGENTGYM_CHROMEDRIVER or PATH.
    chromium: str = ""
    chromedriver: str = ""
    page_load_timeout_s: float = 30.0
    #: Idle browsers this process keeps for the next session (MiniWoB mode): a closed session's browser is
    #: cleaned (windows, cookies, storage) and reused instead of starting Chromium again (1-2 s of CPU an
    #: episode, as a rollout opens a session per episode). 0 quits each browser when its session closes.
    browser_pool: int = 2
    #: Seconds an idle kept browser waits for a session before it is quit.
    browser_idle_s: float = 60.0
    #: WebArena mode only: the deployment's sites and the task configs (see README).
    base_url: str = ""
    sites: dict = field(default_factory=dict)
    task_file: str = ""
    max_steps: int = 30

    def __post_init__(self) -> None:
        if self.reward not in ("raw", "normalized"):
            raise ConfigError(f"env.reward must be 'raw' or 'normalized', got {self.reward!r}")
        if self.browser_pool < 0 or self.browser_idle_s < 0:
            raise ConfigError(f"env.browser_pool and env.browser_idle_s must be >= 0, got {self.browser_pool} and "
                              f"{self.browser_idle_s}")
        if self.mode not in ("miniwob", "webarena"):
            raise ConfigError(f"env.mode must be 'miniwob' or 'webarena', got {self.mode!r}")


class WebNavEnv(BaseEnv):
    """One browser per env instance, started at the first ``reset`` and quit by ``close``."""

    instruction = INSTRUCTION
    action_format = "react"
    Config = WebNavConfig

    def __init__(self, **options: Any) -> None:
        super().__init__()
        self.config = config_from(self, options)
        self._extra_verbs: tuple[str, ...] = ()
        if self.config.mode == "webarena":
            from .webarena import VERBS, WebArenaTasks

            self._webarena = WebArenaTasks(self.config)
            self._extra_verbs = VERBS
            self.instruction = INSTRUCTION.replace("\nAnswer in the format", "\n" + WEBARENA_ACTIONS + "\nAnswer in the format")
        else:
            self._webarena = None
            tasks = list(self.config.tasks) or list(TASKS)
            unknown = sorted(set(tasks) - set(available_tasks()))
            if unknown:
                raise ConfigError(
                    f"env.tasks: unknown MiniWoB task(s) {unknown}; the default set is {list(TASKS)} "
                    "(every task of the installed miniwob package works, see its html/miniwob folder)"
                )
            self.taskset = TaskSet(tasks, self.config.train_seeds, self.config.test_seeds)
        self.browser = None
        self._loaded: str | None = None
        self._episode: dict[str, Any] | None = None

    # -- BaseEnv ------------------------------------------------------------------------------
    def splits(self) -> dict[str, range]:
        if self._webarena is not None:
            return self._webarena.splits()
        return self.taskset.splits()

    def category(self, task_id: int) -> str | None:
        if self._webarena is not None:
            return self._webarena.category(task_id)
        return self.taskset.lookup(task_id)[0]

    def reset(self, *, task_id: int | None = None, seed: int | None = None) -> str:
        from selenium.common.exceptions import WebDriverException
        from urllib3.exceptions import HTTPError

        try:
            return self._reset(task_id, seed)
        except (WebDriverException, HTTPError, ConnectionError):
            # a crashed or hung browser: start a fresh one once rather than fail every later reset
            self._quit_browser()
            return self._reset(task_id, seed)

    def _reset(self, task_id: int | None, seed: int | None) -> str:
        task_id = task_id if task_id is not None else (seed or 0)
        driver = self._driver()
        if self._webarena is not None:
            self._episode = self._webarena.start(driver, task_id)
            return self._observe(restart=True)
        task, task_seed, split = self.taskset.lookup(task_id)
        if seed is not None and task_id != seed:
            task_seed = seed
        if self._loaded != task:
            driver.get((html_dir() / f"{task}.html").as_uri())
            self._loaded = task
        max_ms = int(self.config.episode_time_s * 1000) if self.config.episode_time_s > 0 else 10**9
        driver.execute_script(
            "core.EPISODE_MAX_TIME = arguments[0];"
            "if (core.EP_TIMER !== null) core.endEpisode(0);"
            "if (document.activeElement && document.activeElement.blur) document.activeElement.blur();"
            "Math.seedrandom(arguments[1]); core.setDataMode(arguments[2]); core.startEpisodeReal();",
            max_ms, f"{task}:{task_seed}", split,
        )
        _wait(driver, "return WOB_TASK_READY && !WOB_DONE_GLOBAL;", 2.0)
        self._episode = {"task": task, "seed": task_seed, "task_id": task_id, "done": False, "steps": 0}
        return self._observe(restart=True)

    def step(self, action: str) -> tuple[str, float, bool, dict]:
        ep = self._episode
        if ep is None:
            return "No episode is running: call reset first.", 0.0, False, {"invalid_action": True}
        if ep["done"]:
            return "The episode is over; reset to start another.", 0.0, True, {"invalid_action": True, **ep["result"]}
        ep["steps"] += 1
        driver = self.browser.driver
        try:
            parsed = page.parse(action, extra=self._extra_verbs)
            if parsed.verb == "stop":
                return self._finish(self._webarena.evaluate(driver, ep, parsed.arg), f"answered {parsed.arg!r}")
            if parsed.verb in self._extra_verbs:
                note = self._webarena.act(driver, parsed.verb, parsed.arg)
            else:
                note = page.execute(driver, parsed, native=self.config.native_clicks)
        except page.InvalidAction as exc:
            info = {"invalid_action": True, "task": ep.get("task")}
            return f"Invalid action: {exc}\n\n" + self._observe(), 0.0, False, info
        _settle(driver)
        if self._webarena is not None:
            if ep["steps"] >= self.config.max_steps:
                result = {"task": ep["task"], "score": 0.0, "success": False, "raw_reward": 0.0,
                          "normalized_reward": 0.0, "reason": f"step limit {self.config.max_steps} reached"}
                return self._finish(result, note)
            return f"Last action: {note}\n\n" + self._observe(), 0.0, False, {"task": ep["task"]}
        state = driver.execute_script(
            "return {done: WOB_DONE_GLOBAL, raw: WOB_RAW_REWARD_GLOBAL, reason: WOB_REWARD_REASON,"
            " utterance: core.getUtterance()};"
        )
        if not state["done"]:
            obs = self._observe(utterance=state["utterance"])
            return f"Last action: {note}\n\n{obs}", 0.0, False, {"task": ep["task"]}
        raw = float(state["raw"])
        result = {"task": ep["task"], "seed": ep["seed"], "raw_reward": raw,
                  "normalized_reward": (raw + 1.0) / 2.0, "success": raw > 0, "reason": state["reason"]}
        return self._finish(result, note)

    def _finish(self, result: dict[str, Any], note: str) -> tuple[str, float, bool, dict]:
        self._episode.update(done=True, result=result)
        raw = result["raw_reward"]
        reward = raw if self.config.reward == "raw" else result["normalized_reward"]
        verdict = "success" if result["success"] else "failure"
        return f"Last action: {note}\n\nThe task is over: reward {raw:+.2f} ({verdict}).", reward, True, result

    def close(self) -> None:
        """End the session: its browser goes back to this process's pool (MiniWoB mode, ``browser_pool`` > 0)
        or is quit. WebArena sessions log in to sites, so their browsers are never reused."""
        if self.browser is not None:
            browser, self.browser = self.browser, None
            if self._webarena is None:
                POOL.give(self._pool_key(), browser, keep=self.config.browser_pool, idle_s=self.config.browser_idle_s)
            else:
                browser.quit()
        self._loaded = None
        self._episode = None

    def _quit_browser(self) -> None:
        if self.browser is not None:
            self.browser.quit()
            self.browser = None
        self._loaded = None
        self._episode = None

    def _pool_key(self) -> tuple:
        return (self.config.chromium, self.config.chromedriver, self.config.page_load_timeout_s)

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info["mode"] = self.config.mode
        if self._webarena is None:
            info["tasks"] = list(self.taskset.tasks)
        return info

    # -- helpers ------------------------------------------------------------------------------
    def memory_kib(self) -> int:
        """PSS of this session's browser processes (0 before the first reset)."""
        return self.browser.memory_kib() if self.browser is not None else 0

    def _driver(self) -> Any:
        if self.browser is None and self._webarena is None and self.config.browser_pool > 0:
            self.browser = POOL.take(self._pool_key())
        if self.browser is None:
            from .browser import Browser

            self.browser = Browser(chromium=self.config.chromium, chromedriver=self.config.chromedriver,
                                   page_load_timeout_s=self.config.page_load_timeout_s)
        return self.browser.driver

    def _observe(self, restart: bool = False, utterance: str | None = None) -> str:
        driver = self.browser.driver
        if self._webarena is not None:
            snap = page.snapshot(driver, restart=restart)
            head = f"Task: {self._episode['intent']}\nURL: {snap['url']}\nTitle: {snap['title']}"
        else:
            snap = page.snapshot(driver, skip_ids=_MINIWOB_CHROME, restart=restart)
            if utterance is None:
                utterance = driver.execute_script("return core.getUtterance();")
            head = "Task: " + utterance
        return f"{head}\nPage:\n{page.render(snap, max_elements=self.config.max_elements)}"


def _wait(driver: Any, script: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not driver.execute_script(script):
        if time.monotonic() > deadline:
            raise RuntimeError(f"webnav: page did not become ready ({script!r}) within {timeout_s} s")
        time.sleep(0.02)


def _settle(driver: Any, timeout_s: float = 1.5) -> None:
    """Wait for jQuery animations (accordions, dialogs) to finish before reading the page."""
    deadline = time.monotonic() + timeout_s
    while driver.execute_script("return !!(window.jQuery && jQuery(':animated').length);"):
        if time.monotonic() > deadline:
            return
        time.sleep(0.03)
