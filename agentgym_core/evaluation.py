"""Evaluation metrics (Avg@k, Pass@k, pass^k, success, score, turns, end reasons) and the evaluate runner.

Pure Python: works on :class:`~agentgym_core.rollout.Trajectory` objects or their dicts, so
the trainer, ``agentgym eval`` and the report share one definition of every number. A
category that got no episode still has a row (``n = 0``, metrics ``None``): never a crash.

Summary format (also the JSON ``agentgym eval`` writes and the trainer's ``eval/*.json``)::

    {"k": 4, "overall": ROW, "categories": {"GoTo": ROW, ...}, "meta": {...}}
    ROW = {"n", "tasks", "failed", "success_rate", "avg_at_k", "pass_at_k", "pass_hat_k",
           "score_mean", "turns_mean", "end_reasons": {reason: count}}

With a strategy that tries a task again after a failure (``reflect``), a row counts each
task sample once, by its last attempt (its result), and gains ``"attempts": {"1": rate, "2":
rate, ...}``, the share solved by attempt *j* (Reflexion's success over trials); the summary
repeats the overall one as ``summary["attempts"]``.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

# The summary's tables live in .eval_tables; re-exported here, where callers have always found them.
from .eval_tables import METRIC_LABELS, compare, compare_rows, markdown_table, table_rows, to_markdown  # noqa: F401

#: Maps a task id to its category: a dict (its values also name categories that must get a
#: row even with no episode) or a function such as ``BaseEnv.category``.
Categories = Union[Mapping[int, str | None], Callable[[int], str | None], None]

def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased Pass@k from *n* samples with *c* successes: 1 - C(n-c, k) / C(n, k).

    (Chen et al. 2021, "Evaluating Large Language Models Trained on Code", eq. 1.) With
    fewer samples than *k* the estimator is undefined; we then report whether any succeeded.
    """
    _check_counts("pass_at_k", n, c, k)
    if n < k:
        return 1.0 if c > 0 else 0.0
    if n - c < k:
        return 1.0
    # Product form of C(n-c, k) / C(n, k): stable for large n.
    fail = 1.0
    for i in range(n - c + 1, n + 1):
        fail *= 1.0 - k / i
    return 1.0 - fail


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k from *n* trials with *c* successes: C(c, k) / C(n, k), the chance that *k* trials
    drawn from the *n* all succeed (tau-bench, Yao et al. 2024); with ``n == k``, whether every
    trial succeeded. With fewer trials than *k*: whether all *n* succeeded."""
    from math import comb

    _check_counts("pass_hat_k", n, c, k)
    k = min(k, n)
    return comb(c, k) / comb(n, k)


def _check_counts(what: str, n: int, c: int, k: int) -> None:
    if n <= 0:
        raise ValueError(f"{what} needs at least one sample")
    if not 0 <= c <= n:
        raise ValueError(f"successes c={c} must be within [0, n={n}]")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")


def _get(t: Any, key: str, default: Any = None) -> Any:
    return t.get(key, default) if isinstance(t, Mapping) else getattr(t, key, default)


def _num_turns(t: Any) -> int:
    """The episode's actions (a strategy's plan turns are not actions)."""
    turns = _get(t, "turns", None)
    if turns is None:
        return int(_get(t, "num_turns", 0) or 0)
    return sum(1 for turn in turns if _get(turn, "kind", "action") == "action")


def attempt_chains(trajectories: Iterable[Any]) -> list[list[Any]]:
    """The trajectories grouped by task sample: each attempt 1 starts a chain, a later attempt joins
    the chain of its ``first_episode_id`` (in order). Without attempts every trajectory is a chain."""
    chains: list[list[Any]] = []
    by_first: dict[Any, list[Any]] = {}
    for t in trajectories:
        chain = by_first.get(_get(t, "first_episode_id")) if int(_get(t, "attempt", 1) or 1) > 1 else None
        if chain is None:
            chain = []
            chains.append(chain)
            by_first[_get(t, "episode_id")] = chain
        chain.append(t)
    return chains


def solved_by_attempt(chains: Sequence[Sequence[Any]], attempts: int) -> dict[str, float | None]:
    """``{"1": r1, ..., "N": rN}``: the share of *chains* with a success by attempt *j*."""
    out: dict[str, float | None] = {}
    for j in range(1, attempts + 1):
        solved = [any(_get(t, "success", False) and int(_get(t, "attempt", 1) or 1) <= j for t in c) for c in chains]
        out[str(j)] = sum(solved) / len(solved) if solved else None
    return out


def _category_fn(categories: Categories) -> tuple[Callable[[int], str | None], list[str]]:
    if categories is None:
        return (lambda _tid: None), []
    if callable(categories) and not isinstance(categories, Mapping):
        return categories, []
    mapping = dict(categories)
    names = sorted({str(v) for v in mapping.values() if v is not None})
    return mapping.get, names


def metrics_row(episodes: Sequence[Any], k: int) -> dict[str, Any]:
    """Metrics of a group of episodes (one row of the table)."""
    reasons = Counter(str(_get(t, "end_reason", "done")) for t in episodes)
    row: dict[str, Any] = {
        "n": len(episodes),
        "tasks": 0,
        "failed": sum(1 for t in episodes if _get(t, "failed", False)),
        "success_rate": None,
        "avg_at_k": None,
        "pass_at_k": None,
        "pass_hat_k": None,
        "score_mean": None,
        "turns_mean": None,
        "end_reasons": dict(sorted(reasons.items())),
    }
    if not episodes:
        return row
    by_task: dict[Any, list[bool]] = defaultdict(list)
    for t in episodes:
        by_task[_get(t, "task_id")].append(bool(_get(t, "success", False)))
    row["tasks"] = len(by_task)
    row["success_rate"] = sum(sum(v) for v in by_task.values()) / len(episodes)
    # Avg@k: per task, the mean success of its samples; then the mean over tasks.
    row["avg_at_k"] = sum(sum(v) / len(v) for v in by_task.values()) / len(by_task)
    row["pass_at_k"] = sum(pass_at_k(len(v), sum(v), k) for v in by_task.values()) / len(by_task)
    row["pass_hat_k"] = sum(pass_hat_k(len(v), sum(v), k) for v in by_task.values()) / len(by_task)
    row["score_mean"] = sum(float(_get(t, "score", 0.0) or 0.0) for t in episodes) / len(episodes)
    row["turns_mean"] = sum(_num_turns(t) for t in episodes) / len(episodes)
    return row


def summarize(trajectories: Iterable[Any], *, k: int, categories: Categories = None,
              attempts: int | None = None) -> dict[str, Any]:
    """Overall and per-category metrics of evaluation episodes (``k`` samples per task).

    *categories* maps task ids to category names (see :data:`Categories`); episodes whose
    category is ``None`` count only in the overall row. Attempts at one task sample (see
    :func:`attempt_chains`) count once, by the last; with *attempts* > 1 (the strategy's most;
    None: the most seen) each row also has the share solved by each attempt.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    chains = attempt_chains(trajectories)
    if attempts is None:
        attempts = max((int(_get(t, "attempt", 1) or 1) for c in chains for t in c), default=1)
    category_of, names = _category_fn(categories)
    groups: dict[str, list[list[Any]]] = {name: [] for name in names}
    for c in chains:
        cat = category_of(_get(c[0], "task_id"))
        if cat is not None:
            groups.setdefault(str(cat), []).append(c)

    def row(subset: list[list[Any]]) -> dict[str, Any]:
        out = metrics_row([c[-1] for c in subset], k)
        if attempts > 1:
            out["attempts"] = solved_by_attempt(subset, attempts)
        return out

    summary = {"k": k, "overall": row(chains), "categories": {name: row(groups[name]) for name in sorted(groups)}}
    if attempts > 1:
        summary["attempts"] = summary["overall"]["attempts"]
    return summary


def judged_scores(rewards: Sequence[tuple[Any, float]], trajectories: Sequence[Any]) -> dict[str, Any]:
    """The judged score of evaluation episodes, per reward component that judges batches (``score_batch``:
    the ``judge`` reward). Each entry: ``n`` episodes, ``reward_mean`` and ``reward_std`` (population) of the
    reward it gave every episode, and ``judged`` (verdicts parsed), ``parse_failures``, ``gated`` (the
    env's state check failed, so not judged: 0), ``skipped`` (failed episodes), ``score_mean`` (the
    rubric's raw score over the parsed verdicts), ``screened`` (episodes judged again without what the judge's screen
    took out) and ``lowered`` (those the screened copy scored lower), plus the judge's cost when it reports one (``stats``:
    requests, tokens, seconds). Empty when no component judges."""
    out: dict[str, Any] = {}
    episodes = list(trajectories)
    for fn, _ in rewards:
        batch = getattr(fn, "score_batch", None)
        if not callable(batch) or not episodes:
            continue
        before = dict(getattr(fn, "stats", {}) or {})
        results = batch(episodes)
        infos = [dict(getattr(r, "info", {}) or {}) for r in results]
        values = [float(getattr(r, "reward", 0.0)) for r in results]
        mean = sum(values) / len(values)
        parsed = [i for i in infos if i.get("parsed")]
        rubric = getattr(getattr(fn, "rubric", None), "name", None)
        name = f"judge:{rubric}" if rubric else type(fn).__name__
        entry = {"n": len(values), "reward_mean": mean,
                 "reward_std": (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5,
                 "judged": len(parsed), "parse_failures": sum(1 for i in infos if i.get("parsed") is False),
                 "gated": sum(1 for i in infos if i.get("gated")), "skipped": sum(1 for i in infos if i.get("skipped")),
                 "score_mean": (sum(float(i["score"]) for i in parsed if "score" in i) / len(parsed)) if parsed else None,
                 "screened": sum(1 for i in infos if i.get("screen")),
                 "lowered": sum(1 for i in infos if (i.get("screen") or {}).get("kept") == "screened")}
        after = getattr(fn, "stats", {}) or {}
        cost = {k: after[k] - before.get(k, 0) for k in ("requests", "cache_hits", "prompt_tokens", "completion_tokens",
                                                           "judge_seconds") if k in after}
        if cost:
            entry["cost"] = cost
        out[name] = entry
    return out


# -- settings shared by ``agentgym eval`` and the trainer's before/after evaluation -----------
@dataclass
class EvalPlan:
    """What one evaluation runs: the same rules for ``agentgym eval`` and ``eval/before|after.json``."""

    split: str
    k: int
    tasks: int
    temperature: float
    max_turns: int
    #: Said to the user when k > 1 turned greedy decoding into sampling; None otherwise.
    notice: str | None = None
    #: ``eval.repeat_guard``: how often a reply repeating an action already taken in answer to the same message is
    #: sampled again (at :attr:`repeat_temperature`); 0: never.
    repeat_guard: int = 0
    repeat_temperature: float = 1.0

    def meta(self, *, model: str, env: Any) -> dict[str, Any]:
        """The ``meta`` fields of the summary besides tasks/max_turns/temperature (set by :func:`evaluate`).

        *env* (an :class:`~agentgym_core.env.spec.EnvSpec`) adds which installed env plugin played
        the episodes, e.g. ``"env_plugin": "agentgym-env-babyai 0.1.0"``, so results can be traced
        to its version.
        """
        out = {"model": str(model), "env": env.name, "split": self.split, "k": self.k}
        if env.plugin:
            out["env_plugin"] = env.plugin
        return out


def horizon_note(summary: Mapping[str, Any], *, expert: bool = False, share: float = 0.25) -> str | None:
    """A warning when at least *share* of an evaluation's episodes ran out of turns (``end_reason``
    ``max_turns``) without succeeding, or None. A horizon shorter than the env's tasks caps every
    figure, an expert's above all (it is then no upper bound), and nothing else says so."""
    overall = summary.get("overall") or {}
    n = int(overall.get("n") or 0)
    cut = int((overall.get("end_reasons") or {}).get("max_turns", 0))
    if not n or cut / n < share:
        return None
    horizon = (summary.get("meta") or {}).get("max_turns")
    at = f" of {horizon} turns" if horizon else ""
    who = "the expert's success is a bound of this horizon, not of the env" if expert else \
        "episodes cut there count as failures"
    return (f"note: {cut} of {n} episodes ran out of turns at the horizon{at} ({who}). If the env's tasks "
            f"need more actions, raise it: --max-turns N, or the scheduler's turns in the config.")


def plan_evaluation(eval_cfg: Any, rollout_cfg: Any, max_turns: int, *, split: str | None = None,
                    k: int | None = None, tasks: int | None = None, temperature: float | None = None) -> EvalPlan:
    """Fill what the caller left ``None`` from the run config's ``eval`` section; play *max_turns*
    (:attr:`RunParts.final_max_turns <agentgym_core.assembly.RunParts.final_max_turns>` unless the
    caller asked for others).

    With ``k > 1`` and the config's temperature 0, the *k* episodes of a task would be one
    greedy episode repeated, so they are sampled at ``rollout.temperature`` instead and
    :attr:`EvalPlan.notice` says so (an explicit *temperature* is kept as given).
    """
    split = split or eval_cfg["split"]
    k = int(k if k is not None else eval_cfg["k"])
    tasks = int(tasks if tasks is not None else eval_cfg["tasks"])
    notice = None
    if temperature is None:
        temperature = float(eval_cfg["temperature"])
        if k > 1 and temperature == 0:
            temperature = float(rollout_cfg["temperature"])
            notice = (f"k={k} samples per task: sampling at the rollout temperature {temperature} "
                      "(greedy would repeat one episode)")
    return EvalPlan(split=split, k=k, tasks=tasks, temperature=float(temperature), max_turns=int(max_turns),
                    notice=notice, repeat_guard=int(eval_cfg.get("repeat_guard", 0) or 0),
                    repeat_temperature=float(eval_cfg.get("repeat_temperature", 1.0)))


# -- the runner -------------------------------------------------------------------------------
def select_tasks(ids: Sequence[int], n: int) -> list[int]:
    """*n* task ids spread evenly over *ids* (all of them when ``n`` is 0 or too large).

    Spreading, not taking the first *n*, keeps every category of a split that is ordered by
    category (levels, task types) in a small evaluation.
    """
    ids = list(ids)
    if n <= 0 or n >= len(ids):
        return ids
    return [ids[(i * len(ids)) // n] for i in range(n)]


def eval_tasks(task_ids: Sequence[int], k: int) -> list[tuple[int, int]]:
    """``(task_id, group_id)`` pairs: each task *k* times, one group per task."""
    return [(int(tid), group) for group, tid in enumerate(task_ids) for _ in range(k)]


async def evaluate(parts: Any, plan: EvalPlan, *, model: str, step: int = 0, dump_path: Any = None,
                   label: str | None = "eval") -> tuple[dict[str, Any], list[Any]]:
    """Run *plan* with *parts* (a :class:`~agentgym_core.assembly.RunParts`): ``plan.k`` episodes
    of ``plan.tasks`` task ids spread over ``plan.split``, then summarize them per category.

    The one evaluation ``agentgym eval`` and the trainer's ``eval/before|after.json`` both run:
    the task ids and categories come from the env's description (``parts.env``), never from a
    split's size. Returns ``(summary, trajectories)``; *model* names what was evaluated in the
    summary's ``meta``; *dump_path* writes the episodes as JSONL for the viewer and report.
    Progress goes to stderr as ``<label>: 12/16 episodes, 5 succeeded (41 s)`` (None: silent).
    """
    from agentgym_core.rollout.runner import rollout
    from agentgym_core.rollout.trajectory import dump_trajectories

    ids = select_tasks(parts.env.ids(plan.split), plan.tasks)
    say = ProgressLine(label) if label else None
    trajectories = await rollout(parts, eval_tasks(ids, plan.k), max_turns=plan.max_turns, step=step,
                                 temperature=plan.temperature, progress=say.update if say else None,
                                 repeat_guard=plan.repeat_guard, repeat_temperature=plan.repeat_temperature)
    if say is not None:
        say.close(sum(bool(t.success) for t in trajectories))
    strategy = parts.strategy
    summary = summarize(trajectories, k=plan.k, categories=parts.env.categories_of(ids),
                        attempts=int(strategy.max_attempts))
    summary["meta"] = {"tasks": len(ids), "max_turns": plan.max_turns, "temperature": plan.temperature,
                       **plan.meta(model=model, env=parts.env), "strategy": strategy.name}
    if plan.repeat_guard:
        turns = [turn for t in trajectories for turn in t.turns]
        summary["meta"].update(repeat_guard=plan.repeat_guard, repeat_temperature=plan.repeat_temperature,
                               turns_resampled=sum(bool(turn.resampled) for turn in turns), turns=len(turns))
    try:
        judged = judged_scores(parts.rewards, trajectories)
    finally:  # after the judge, so each episode's line carries its verdict (info["judge"]); also if it failed
        if dump_path is not None:
            dump_trajectories(trajectories, dump_path, step)
    if judged:
        summary["judged"] = judged
    return summary, trajectories


class ProgressLine:
    """``eval before: 12/16 episodes (41 s)`` on stderr, rewritten in place on a terminal and
    printed at most every 10 s otherwise (logs stay short); the last line says what succeeded."""

    def __init__(self, label: str, every: float = 10.0) -> None:
        import sys
        import time

        self.label, self.every, self.clock = label, every, time.monotonic
        self.start = self.last = self.clock()
        self.stream = sys.stderr
        self.tty = bool(getattr(sys.stderr, "isatty", lambda: False)())
        self.done = self.total = 0

    def update(self, done: int, total: int) -> None:
        self.done, self.total = done, total
        now = self.clock()
        if self.tty:
            self.stream.write(f"\r{self.label}: {done}/{total} episodes ({now - self.start:.0f} s)")
            self.stream.flush()
        elif now - self.last >= self.every and done < total:
            self.last = now
            print(f"{self.label}: {done}/{total} episodes ({now - self.start:.0f} s)", file=self.stream, flush=True)

    def close(self, succeeded: int) -> None:
        line = f"{self.label}: {self.total} episodes, {succeeded} succeeded ({self.clock() - self.start:.0f} s)"
        print(("\r" if self.tty else "") + line, file=self.stream, flush=True)
