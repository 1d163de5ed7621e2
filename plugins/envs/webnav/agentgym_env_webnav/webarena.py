"""WebArena mode: WebArena task configs played on a deployment the user runs, with the same
text rendering and actions as MiniWoB, plus ``goto [url]``, ``go_back`` and ``stop [answer]``.

Only WebArena's deterministic checks are implemented (``string_match`` with ``exact_match`` /
``must_include``, and ``url_match``); a task that needs ``fuzzy_match`` (an LLM judge) or
``program_html`` scores 0 and says so in ``info["unsupported"]``. Untested against a real
WebArena deployment here; the tests drive a local site through this exact code path.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlparse

from agentgym_core import ConfigError

VERBS = ("stop", "goto", "go_back")


class WebArenaTasks:
    """Loads task configs (a JSON list, JSONL, or a folder of WebArena ``config_files/*.json``)."""

    def __init__(self, cfg: Any) -> None:
        if not cfg.task_file:
            raise ConfigError("env.task_file is required with env.mode=webarena: a JSON/JSONL file or a folder "
                              "of WebArena task configs (config_files/*.json)")
        if not cfg.base_url and not cfg.sites:
            raise ConfigError("env.mode=webarena needs env.base_url or env.sites (e.g. {__SHOPPING__: "
                              "'http://host:7770'}) pointing at your WebArena deployment")
        self.sites = {"__BASE__": cfg.base_url.rstrip("/"), **{k: str(v).rstrip("/") for k, v in cfg.sites.items()}}
        self.base_url = cfg.base_url
        self.max_steps = cfg.max_steps
        self.tasks = _load(Path(cfg.task_file))

    def splits(self) -> dict[str, range]:
        # WebArena is an evaluation set: both splits hold every task (train on it only knowingly)
        return {"train": range(len(self.tasks)), "test": range(len(self.tasks))}

    def category(self, task_id: int) -> str | None:
        sites = self.tasks[task_id % len(self.tasks)].get("sites") or [None]
        return sites[0]

    def url(self, raw: str) -> str:
        for key, value in self.sites.items():
            if value:
                raw = raw.replace(key, value)
        return urljoin(self.base_url.rstrip("/") + "/", raw) if self.base_url else raw

    def start(self, driver: Any, task_id: int) -> dict[str, Any]:
        task = self.tasks[task_id % len(self.tasks)]
        driver.delete_all_cookies()
        driver.get(self.url(task["start_url"]))
        return {"task": task.get("task_id", task_id), "intent": task["intent"], "config": task,
                "done": False, "steps": 0}

    def act(self, driver: Any, verb: str, arg: str) -> str:
        """Apply ``goto`` / ``go_back`` (``stop`` is handled by :meth:`evaluate`)."""
        from selenium.common.exceptions import WebDriverException

        from .page import InvalidAction

        try:
            if verb == "goto":
                driver.get(self.url(arg.strip()))
                return f"went to {arg.strip()}"
            driver.back()
            return "went back"
        except WebDriverException as exc:
            raise InvalidAction(f"{verb} failed: {(exc.msg or str(exc)).strip()[:160]}") from None

    def evaluate(self, driver: Any, episode: dict[str, Any], answer: str) -> dict[str, Any]:
        """Score the episode as WebArena does (product of its checks); unsupported checks score 0."""
        spec = episode["config"].get("eval", {})
        score, unsupported = 1.0, []
        for kind in spec.get("eval_types", []):
            if kind == "string_match":
                refs = spec.get("reference_answers") or {}
                if "fuzzy_match" in refs:
                    unsupported.append("string_match.fuzzy_match (needs an LLM judge)")
                    score = 0.0
                score *= _string_match(answer, refs)
            elif kind == "url_match":
                score *= _url_match(driver.current_url, spec.get("reference_url", ""), self.url)
            else:
                unsupported.append(kind)
                score = 0.0
        return {"task": episode["task"], "answer": answer, "score": score, "success": score >= 1.0,
                "raw_reward": score, "normalized_reward": score, "unsupported": unsupported}


def _load(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        raise ConfigError(f"env.task_file {str(path)!r} does not exist")
    if path.is_dir():
        files = sorted(path.glob("*.json"), key=lambda p: (len(p.stem), p.stem))
        tasks = [json.loads(p.read_text()) for p in files]
    elif path.suffix == ".jsonl":
        tasks = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    else:
        loaded = json.loads(path.read_text())
        tasks = loaded if isinstance(loaded, list) else [loaded]
    for i, task in enumerate(tasks):
        missing = [k for k in ("intent", "start_url") if k not in task]
        if missing:
            raise ConfigError(f"env.task_file {str(path)!r}: task #{i} lacks {missing} (WebArena config format)")
    if not tasks:
        raise ConfigError(f"env.task_file {str(path)!r} holds no tasks")
    return tasks


def _norm(text: str) -> str:
    return " ".join(str(text).lower().strip().strip(".").split())


def _string_match(answer: str, refs: dict[str, Any]) -> float:
    if "exact_match" in refs and _norm(answer) != _norm(refs["exact_match"]):
        return 0.0
    for needle in refs.get("must_include", []):
        if _norm(needle) not in _norm(answer):
            return 0.0
    return 1.0


def _url_match(current: str, reference: str, resolve: Any) -> float:
    """Any of the ``|OR|`` alternatives: same path and the reference's query values present."""
    got = urlparse(current)
    for alt in reference.split(" |OR| "):
        want = urlparse(resolve(alt.strip()))
        if got.path.rstrip("/") != want.path.rstrip("/"):
            continue
        got_q, want_q = parse_qs(got.query), parse_qs(want.query)
        if all(set(v) <= set(got_q.get(k, [])) for k, v in want_q.items()):
            return 1.0
    return 0.0
