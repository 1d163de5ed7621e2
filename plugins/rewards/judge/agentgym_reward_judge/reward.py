"""The ``judge`` reward: an episode's score from a model judge, on the last turn, in [0, 1].

``__call__(trajectory)`` is the reward interface core calls (one episode at a time, synchronously).
:meth:`JudgeReward.score_batch` judges many episodes in one go (the requests of a step in flight
together, or one engine batch) and is where group-relative judging happens (``mode: group``: the
episodes of one GRPO group ranked against each other in one judge call); a caller that has the
step's episodes calls it first, and ``__call__`` then returns what it found. A state check stays in
charge: with ``combine: gate`` (the default where the env reports ``success``) an episode that
failed it gets 0 and is not even shown to the judge. With ``screen`` (the default) an episode whose
agent wrote something that cannot earn a score (text addressed to the judge, filler, a reply past the
per-turn cap: :mod:`.screen`) is judged a second time without it, and keeps the lower reward. Each
judged episode keeps the judge's raw answer in its last turn's ``info["judge"]``, so the trajectories
written to the run carry it.
"""
from __future__ import annotations

import warnings
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from agentgym_core import Reward, config_from, refuse_unknown_options

from .cache import VerdictCache, cache_file, cache_key
from .judges import JudgeSettings, LoopThread, make_judge
from .prompt import Limits, absolute_messages, content_hash, episode_document, group_messages, new_fence, task_text
from .rubric import load_rubric
from .screen import screen
from .verdict import ParseFailure, parse_group_verdict, parse_verdict

MODES = ("absolute", "group")
COMBINES = ("auto", "gate", "none")


@dataclass
class JudgeConfig:
    #: A shipped rubric's name (``satisfaction``, ``plan_completeness``), a YAML file, or a mapping.
    rubric: Any = "satisfaction"
    #: Which judge and how to ask it (see :class:`~.judges.JudgeSettings`).
    judge: JudgeSettings = field(default_factory=JudgeSettings)
    #: ``absolute`` (each episode alone) or ``group`` (a group's episodes ranked together; needs score_batch).
    mode: str = "absolute"
    #: ``trajectory`` or ``final_answer`` (None: the rubric's choice).
    show: Optional[str] = None
    #: ``gate``: judged only where the env's state check passed, else 0; ``none``: judged alone;
    #: ``auto``: gate where the episode's last turn reports ``success``.
    combine: str = "auto"
    #: The reward of an episode whose verdict could not be parsed (counted in ``stats``).
    parse_failure_reward: float = 0.0
    #: The run directory whose ``judge/cache.jsonl`` holds the verdicts (None: the training run's, if any).
    run_dir: Optional[str] = None
    #: The cache file, if not the run directory's (neither: the cache lives in memory only).
    cache_path: Optional[str] = None
    #: Characters the judge reads of one turn, and of one episode.
    turn_chars: int = 1500
    episode_chars: int = 12000
    #: Judge a screened copy too where screening removed part of an agent reply (text addressed to the judge,
    #: filler, what runs past ``turn_chars``), and keep the lower reward: what it removes can only lower a score.
    screen: bool = True
    #: A tokenizer (model folder or alias) to decode the episode's prompt with, so the judge sees the task
    #: (None: in a training run, its ``model.path``'s; in ``agentgym eval --model``, set it to that model).
    tokenizer: Optional[str] = None
    #: From Python: a function of the trajectory giving the task text (beats ``tokenizer``).
    task: Any = None

    def __post_init__(self) -> None:
        from agentgym_core import check_range

        if isinstance(self.judge, dict):
            refuse_unknown_options("judge reward: judge", JudgeSettings, self.judge)
            self.judge = JudgeSettings(**self.judge)
        for key, value, allowed in (("mode", self.mode, MODES), ("combine", self.combine, COMBINES),
                                    ("show", self.show or "trajectory", ("trajectory", "final_answer"))):
            if value not in allowed:
                raise ValueError(f"rewards[].{key} must be one of {', '.join(allowed)}, got {value!r}")
        check_range("rewards[].parse_failure_reward", self.parse_failure_reward, ge=0.0, le=1.0)
        check_range("rewards[].turn_chars", self.turn_chars, ge=100)
        check_range("rewards[].episode_chars", self.episode_chars, ge=self.turn_chars)
        if self.task is not None and not callable(self.task):
            raise ValueError(f"rewards[].task must be a function of the trajectory, got {type(self.task).__name__}")


@dataclass
class Judged:
    """One episode's outcome: its reward and what goes into ``info["judge"]``."""

    reward: float
    info: dict[str, Any]


class JudgeReward(Reward):
    """A model judge's score of the episode against a rubric, mapped to [0, 1], on the last turn."""

    Config = JudgeConfig

    def __init__(self, **options: Any) -> None:
        self.config = cfg = config_from(self, options)
        self.rubric = load_rubric(cfg.rubric)
        cfg.judge.require()
        self.judge = make_judge(cfg.judge)  # nothing is loaded or connected before the first verdict
        self.cache = VerdictCache(cache_file(cfg.run_dir, cfg.cache_path))  # see _open_cache
        self.limits = Limits(cfg.turn_chars, cfg.episode_chars)
        self.show = cfg.show or self.rubric.show
        self.rubric_hash = self.rubric.digest()
        #: Counters since construction: judged (asked), cache_hits, parse_failures, gated, skipped, tokens, seconds.
        #: screened: episodes also judged as screened; lowered: those whose screened copy scored lower.
        self.stats = dict.fromkeys(("episodes", "requests", "cache_hits", "parse_failures", "gated", "skipped",
                                    "screened", "lowered", "prompt_tokens", "completion_tokens"), 0) | \
            {"judge_seconds": 0.0}
        self._loop = LoopThread()
        # Not closed by its owner: its connections and thread are let go when it is collected.
        weakref.finalize(self, self._loop.shutdown, self.judge.aclose)
        self._ready: dict[int, tuple[Any, Judged]] = {}
        self._decode: Any = None
        self._warned = False

    # -- the reward interface -----------------------------------------------------------------
    def __call__(self, trajectory: Any) -> list[float]:
        rewards = [0.0] * len(trajectory.turns)
        if not rewards:
            return rewards
        ready = self._ready.pop(id(trajectory), None)
        if ready is None or ready[0] is not trajectory:
            if self.config.mode == "group" and not self._warned:
                self._warned = True
                warnings.warn("judge reward (mode: group): the episodes reach the reward one at a time, so each is "
                              "judged alone; call JudgeReward.score_batch(step's episodes) first to rank groups",
                              stacklevel=2)
            judged = self.score_batch([trajectory])[0]
            self._ready.pop(id(trajectory), None)
        else:
            judged = ready[1]
        rewards[-1] = judged.reward
        return rewards

    def close(self) -> None:
        """Close the judge's connections (or its local model) and stop its event loop thread; a later verdict
        opens them again. Core's ``RunParts.aclose`` calls it at the end of a run or an evaluation."""
        if not self._loop.running:
            return  # never asked: nothing was opened
        try:
            self._loop.run(self.judge.aclose())
        finally:
            self._loop.stop()

    # -- many episodes at once ----------------------------------------------------------------
    def score_batch(self, trajectories: Sequence[Any]) -> list[Judged]:
        """Judge *trajectories* together (absolute, or by group with ``mode: group``); each result is also
        written to the episode's last turn (``info["judge"]``) and handed to the next ``__call__`` on it."""
        self._open_cache()
        self._ready.clear()  # results nobody asked for (keeps no trajectory alive past its step)
        results: list[Optional[Judged]] = [None] * len(trajectories)
        todo: list[tuple[Any, dict[str, Any]]] = []
        shadow: dict[int, tuple[dict[str, Any], list[str]]] = {}  # the screened copies that differ
        for i, traj in enumerate(trajectories):
            self.stats["episodes"] += 1
            skipped = self._not_judged(traj)
            if skipped is not None:
                results[i] = skipped
                continue
            doc, copy, removed = self._documents(traj)
            todo.append((i, doc))
            if removed and copy != doc:
                shadow[i] = (copy, removed)
        groups: list[list[tuple[Any, dict[str, Any]]]] = []
        if self.config.mode == "group":
            by_group: dict[Any, list[tuple[Any, dict[str, Any]]]] = {}
            for item in todo:
                by_group.setdefault(trajectories[item[0]].group_id, []).append(item)
            groups = [g for g in by_group.values() if len(g) > 1]
            singles = [g[0] for g in by_group.values() if len(g) == 1]
            groups += [[(("screened", i), shadow[i][0] if i in shadow else d) for i, d in g]
                       for g in groups if any(i in shadow for i, _ in g)]
        else:
            singles = list(todo)
        singles += [(("screened", i), shadow[i][0]) for i, _ in singles if i in shadow]
        judged_all = dict(self._judge(singles, groups))
        for i, _ in todo:
            results[i] = judged_all[i] if i not in shadow else \
                self._lower(judged_all[i], judged_all[("screened", i)], shadow[i][1])
        for traj, judged in zip(trajectories, results):
            assert judged is not None
            if traj.turns:
                traj.turns[-1].info = {**(traj.turns[-1].info or {}), "judge": judged.info}
            self._ready[id(traj)] = (traj, judged)
        return results  # type: ignore[return-value]

    def _open_cache(self) -> None:
        """Follow the run directory: a training run starts (``on_run_start``) after its rewards are built."""
        path = cache_file(self.config.run_dir, self.config.cache_path)
        if path != self.cache.path:
            self.cache = VerdictCache(path, known=self.cache.entries)

    def _not_judged(self, traj: Any) -> Optional[Judged]:
        """The outcome of an episode the judge does not see (None: it is to be judged)."""
        base = {"rubric": self.rubric.name, "model": self.judge.name}
        if not traj.turns or getattr(traj, "failed", False):
            self.stats["skipped"] += 1
            return Judged(0.0, {**base, "skipped": "failed episode" if traj.turns else "no turns"})
        known = "success" in (traj.turns[-1].info or {})
        gate = self.config.combine == "gate" or (self.config.combine == "auto" and known)
        if gate and not bool(traj.success):
            self.stats["gated"] += 1
            return Judged(0.0, {**base, "gated": True, "success": False})
        return None

    def _documents(self, traj: Any) -> tuple[dict[str, Any], Optional[dict[str, Any]], list[str]]:
        """The episode as the judge reads it, its screened copy (None with ``screen: false``) and what the
        screen took out."""
        cfg = self.config
        task = cfg.task(traj) if cfg.task is not None else task_text(traj, self._decoder())
        info = traj.turns[-1].info or {}
        reference = info.get(self.rubric.reference) if self.rubric.reference else None
        removed: list[str] = []

        def screened(text: str) -> str:
            done = screen(text, self.limits.turn_chars)
            removed.extend(done.removed)
            return done.text

        doc = episode_document(traj, show=self.show, limits=self.limits, task=task, reference=reference)
        copy = episode_document(traj, show=self.show, limits=self.limits, task=task, reference=reference,
                                agent_text=screened) if cfg.screen else None
        return doc, copy, removed

    def _lower(self, played: Judged, screened: Judged, removed: list[str]) -> Judged:
        """The outcome of an episode judged as played and as screened: the lower reward, with both verdicts."""
        self.stats["screened"] += 1
        lowered = screened.reward < played.reward
        self.stats["lowered"] += int(lowered)
        kept = screened if lowered else played
        both = {name: {k: j.info.get(k) for k in ("score", "reward", "parsed", "raw")}
                for name, j in (("as_played", played), ("screened", screened))}
        return Judged(kept.reward, {**kept.info, "screen": {"removed": removed, "kept": "screened" if lowered else
                                                                "as_played", **both}})

    def _decoder(self) -> Any:
        """Decodes an episode's prompt: with ``tokenizer``, else the tokenizer of the training run's model
        (None: neither, or that one does not load)."""
        from . import cache

        name = self.config.tokenizer or cache.current_model
        if not name:
            return None
        if self._decode is None or self._decode[0] != name:
            from agentgym_hf.loading import load_tokenizer

            try:
                tok = load_tokenizer(name)
            except Exception as exc:  # noqa: BLE001 - only the configured one must load
                if self.config.tokenizer:
                    raise
                warnings.warn(f"judge reward: the run's model {name!r} has no tokenizer to decode the task with "
                              f"({exc}); the judge reads the turns only. Set the reward's tokenizer option.",
                              stacklevel=2)
                tok = None
            self._decode = (name, None if tok is None else (lambda ids: tok.decode(ids, skip_special_tokens=True)))
        return self._decode[1]

    def _judge(self, singles: list[tuple[int, dict[str, Any]]],
               groups: list[list[tuple[int, dict[str, Any]]]]) -> list[tuple[int, Judged]]:
        """Cached verdicts where there are some; one batch of judge requests for the rest."""
        jobs: list[tuple[str, list[tuple[int, dict[str, Any]]]]] = []
        for item in singles:
            jobs.append(("absolute", [item]))
        for group in groups:
            jobs.append(("group", group))
        out: list[tuple[int, Judged]] = []
        asks: dict[str, tuple[str, list[tuple[int, dict[str, Any]]], list[dict[str, str]]]] = {}
        waiting: list[tuple[str, list[tuple[int, dict[str, Any]]]]] = []
        for mode, members in jobs:
            docs = [d for _, d in members]
            key = cache_key(self.judge.name, self.rubric_hash, content_hash(mode, docs))
            if self.cache.get(key) is None and key not in asks:
                fence, prefill = new_fence(), self.config.judge.prefills
                messages = absolute_messages(self.rubric, docs[0], fence, prefill) if mode == "absolute" else \
                    group_messages(self.rubric, docs, fence, prefill)
                asks[key] = (mode, members, messages)
            waiting.append((key, members))
        if asks:
            answers = self._loop.run(self.judge.ask_many([m for _, _, m in asks.values()]))
            failed = [a for a in answers if isinstance(a, BaseException)]
            self.stats["requests"] += len(answers)
            for (key, (mode, members, _)), answer in zip(asks.items(), answers):
                if isinstance(answer, BaseException):
                    continue  # the verdicts that came are cached; the first failure is raised below
                self.stats["prompt_tokens"] += answer.prompt_tokens
                self.stats["completion_tokens"] += answer.completion_tokens
                self.stats["judge_seconds"] += answer.seconds
                self.cache.put(key, self._verdict(mode, len(members), answer))
            if failed:
                raise failed[0]
        fresh = set(asks)
        for key, members in waiting:
            entry = self.cache.get(key)
            assert entry is not None
            if key not in fresh:
                self.stats["cache_hits"] += 1
            if not entry["parsed"] and any(not isinstance(i, tuple) for i, _ in members):
                self.stats["parse_failures"] += 1  # verdicts on episodes as played (a screened copy's is in its info)
            for k, (i, _) in enumerate(members):
                out.append((i, self._outcome(entry, k, cached=key not in fresh)))
        return out

    def _verdict(self, mode: str, size: int, answer: Any) -> dict[str, Any]:
        """The cache entry for one answer: the parsed scores, or why it could not be parsed."""
        entry: dict[str, Any] = {"model": self.judge.name, "rubric": self.rubric.name, "rubric_hash": self.rubric_hash,
                                 "mode": mode, "raw": answer.text, "prompt_tokens": answer.prompt_tokens,
                                 "completion_tokens": answer.completion_tokens, "seconds": round(answer.seconds, 4)}
        try:
            verdict = parse_verdict(answer.text, self.rubric.scale) if mode == "absolute" else \
                parse_group_verdict(answer.text, self.rubric.scale, size)
        except ParseFailure as exc:
            return {**entry, "parsed": False, "error": str(exc)}
        return {**entry, "parsed": True, "scores": list(verdict.scores), "reason": verdict.reason}

    def _outcome(self, entry: dict[str, Any], k: int, *, cached: bool) -> Judged:
        info = {"rubric": entry["rubric"], "model": entry["model"], "mode": entry["mode"], "raw": entry["raw"],
                "parsed": entry["parsed"], "cached": cached}
        if not entry["parsed"]:
            reward = float(self.config.parse_failure_reward)
            return Judged(reward, {**info, "error": entry["error"], "reward": reward})
        score = int(entry["scores"][k])
        reward = self.rubric.reward(score)
        return Judged(reward, {**info, "score": score, "reward": reward, "reason": entry.get("reason", "")})

