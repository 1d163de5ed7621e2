"""Demonstrations: an expert's episodes on training tasks, as chat-messages JSONL for a warm start.

One line per episode, the format Hugging Face ``datasets`` and TRL read::

    {"messages": [{"role": "system", ...}, {"role": "user", ...}, {"role": "assistant", ...}, ...],
     "env": "textcraft", "task_id": 17, "split": "train", "expert": "textcraft.planner",
     "reward": 1.0, "success": true, "turns": 5, "action_format": "react"}

The messages are what the RL agent's conversation would hold had it written the expert's
actions (:func:`~agentgym_core.conversation.episode_messages`): the same instruction in the
same place and the same action format. A ``<out>.meta.json`` beside the file records the env,
its options, the agent settings, the expert, the split and every task id played.
Demonstrations come from one split (``train``) and never from the evaluation split: the
command refuses, and the ``sft`` trainer refuses data whose task ids are held out.
"""
from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .conversation import episode_messages
from .errors import AgentGymError


class DemosError(AgentGymError):
    """Demonstrations cannot be recorded or read as asked (held-out ids, a missing file, bad lines)."""


def check_split(spec: Any, split: str, eval_split: str) -> list[int]:
    """The task ids of *split*, refused when it is the evaluation split or shares ids with it."""
    if split not in spec.splits:
        raise DemosError(f"env {spec.name!r} has no split {split!r}; its splits: {', '.join(spec.splits)}")
    if split == eval_split:
        raise DemosError(f"demonstrations from the {split!r} split would train on the held-out tasks that eval.split "
                         f"evaluates; record them from the train split (--split train)")
    ids = [int(i) for i in spec.ids(split)]
    held = set(spec.ids(eval_split)) if eval_split in spec.splits else set()
    shared = [i for i in ids if i in held]
    if shared:
        raise DemosError(f"split {split!r} shares {len(shared)} task ids with the evaluation split {eval_split!r} "
                         f"(e.g. {shared[:5]}); demonstrations must never come from held-out tasks")
    return ids


def task_order(ids: Sequence[int], seed: int) -> list[int]:
    """*ids* in a seeded shuffled order, so that the first N demonstrations cover the split."""
    order = list(ids)
    random.Random(seed).shuffle(order)
    return order


def demo_record(episode: Any, *, spec: Any, agent: Any, action_format: str, split: str, expert: str) -> dict[str, Any]:
    """One JSONL line for an :class:`~agentgym_core.experts.ExpertEpisode`."""
    messages = episode_messages(spec.instruction, agent, action_format, episode.first_observation, episode.steps)
    return {"messages": messages, "env": spec.name, "task_id": episode.task_id, "split": split, "expert": expert,
            "reward": episode.score, "success": episode.success, "turns": len(episode.steps),
            "end_reason": episode.end_reason, "action_format": action_format}


#: How many episodes an expert plays, none of them successful and most cut at max_turns, before
#: :func:`record_demos` stops and asks for a longer horizon instead of playing the whole split.
OUT_OF_TURNS_AFTER = 16


def out_of_turns(played: Sequence[Any], turns: int, expert: str, env: str) -> None:
    """Raise when the first :data:`OUT_OF_TURNS_AFTER` episodes all failed and most ran out of turns:
    the horizon is shorter than the expert needs (recording on would play the whole split for nothing)."""
    if len(played) != OUT_OF_TURNS_AFTER or any(e.success for e in played):
        return
    cut = sum(e.end_reason == "max_turns" for e in played)
    if 2 * cut <= len(played):
        return
    raise DemosError(f"expert {expert} solved none of the first {len(played)} {env} train tasks, and {cut} of them "
                     f"ran out of turns at max_turns {turns}: the run's horizon is shorter than the expert needs. Raise "
                     f"it (the scheduler's final turns: scheduler.turns, or the last of scheduler.rounds; "
                     f"`agentgym eval --expert {expert.partition('.')[2] or expert} -c CONFIG` shows how many actions "
                     f"it takes) and record again")


def write_demos(path: Path, records: Iterable[dict[str, Any]], meta: dict[str, Any]) -> int:
    """Write *records* as JSONL to *path* and *meta* to ``<path>.meta.json``; returns the count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
            n += 1
    meta_path(path).write_text(json.dumps({**meta, "episodes": n}, indent=2) + "\n", encoding="utf-8")
    return n


def record_demos(cfg: Any, manager: Any, out: Path, *, expert: str | None = None, split: str = "train",
                 episodes: int = 100, max_turns: int | None = None, keep_all: bool = False,
                 say: Any = None) -> dict[str, Any]:
    """Play the expert on *split* of the config's env until *episodes* (successful ones unless *keep_all*)
    are recorded, write them to *out* (:func:`write_demos`) and return the meta record.

    The conversations are written for the config's agent settings (instruction position, action
    format, system prompt) and max_turns (the scheduler's final one unless *max_turns*). *say* gets
    lines of progress (default: stderr).
    """
    import sys
    import time

    from omegaconf import OmegaConf

    from .assembly import AgentSettings, checkpoint_scheduler, final_max_turns
    from .evaluation import ProgressLine
    from .experts import build_env, load_expert, play_tasks
    from .rollout.actions import check_format

    def tell(line: str) -> None:
        (say or (lambda text: print(text, file=sys.stderr, flush=True)))(line)

    if cfg.agent.strategy.name != "default":
        tell(f"note: demonstrations are conversations of the default strategy (one episode, every reply an "
             f"action), not of agent.strategy={cfg.agent.strategy.name}")
    name, play = load_expert(manager, cfg.env.name, expert)
    instance, spec = build_env(cfg, manager)
    try:
        ids = task_order(check_split(spec, split, cfg.eval.split), int(cfg.run.seed))
        turns = max_turns or final_max_turns(checkpoint_scheduler(cfg, manager))
        agent = AgentSettings.from_config(cfg)
        fmt = check_format(agent.action_format or spec.action_format)
        tell(f"Recording {episodes} {'' if keep_all else 'successful '}episodes of expert {name} on "
             f"{cfg.env.name}/{split} ({len(ids)} tasks), max_turns {turns}, {fmt} replies")
        line = ProgressLine("demos")
        started = time.perf_counter()

        def kept(e: Any) -> bool:
            return keep_all or e.success

        def enough(done: list[Any]) -> bool:
            if not keep_all:
                out_of_turns(done, turns, name, cfg.env.name)
            return sum(1 for e in done if kept(e)) >= episodes

        played = play_tasks(play, instance, ids, max_turns=turns, enough=enough,
                            progress=lambda done, total, ok: line.update(done, total))
        line.total = len(played)
        line.close(sum(e.success for e in played))
    finally:
        instance.close()
    chosen = [e for e in played if kept(e)]
    records = [demo_record(e, spec=spec, agent=agent, action_format=fmt, split=split, expert=name) for e in chosen]
    options = {k: v for k, v in OmegaConf.to_container(cfg.env, resolve=True).items() if k != "token"}
    meta = {"env": cfg.env.name, "env_options": options, "expert": name, "split": split, "max_turns": turns,
            "action_format": fmt,
            "agent": {"instruction_position": agent.instruction_position, "system_prompt": agent.system_prompt},
            "played": len(played), "succeeded": sum(e.success for e in played), "successful_only": not keep_all,
            "task_ids": [e.task_id for e in chosen], "played_task_ids": [e.task_id for e in played],
            "seconds": round(time.perf_counter() - started, 2)}
    n = write_demos(Path(out), records, meta)
    rate = meta["succeeded"] / max(1, len(played))
    tell(f"Wrote {n} episodes to {out} (expert success {100 * rate:.1f}% over {len(played)} played, "
         f"{sum(r['turns'] for r in records) / max(1, n):.1f} turns each; details in {meta_path(Path(out))})")
    if n < episodes:
        tell(f"warning: only {n} of the {episodes} episodes asked for: the {split} split has {len(ids)} tasks and the "
             f"expert solved {meta['succeeded']} within {turns} turns (raise --max-turns, or pass --all)")
    return {**meta, "episodes": n}


def meta_path(path: Path) -> Path:
    return path.with_name(path.name + ".meta.json")


def read_conversations(path: str | Path) -> list[dict[str, Any]]:
    """Conversations from a chat-messages JSONL file, or a folder holding ``*.jsonl`` files or a Hugging
    Face dataset saved with ``save_to_disk``: each a dict with ``messages`` (other keys kept)."""
    p = Path(path).expanduser()
    if not p.exists():
        raise DemosError(f"training data {str(p)!r} does not exist; record demonstrations with `agentgym demos ENV "
                         f"--split train --episodes N --out {p}` or give a chat-messages JSONL file")
    if p.is_dir():
        if any((p / name).is_file() for name in ("dataset_info.json", "state.json", "dataset_dict.json")):
            return _hf_dataset(p)
        files = sorted(p.glob("*.jsonl"))
        if not files:
            raise DemosError(f"training data folder {str(p)!r} holds neither *.jsonl files nor a Hugging Face dataset "
                             "saved with save_to_disk")
        return [row for f in files for row in _jsonl(f)]
    return _jsonl(p)


def _jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise DemosError(f"{path}:{n} is not JSON ({exc}); each line holds one conversation") from None
            if not isinstance(row, dict) or "messages" not in row:
                raise DemosError(f"{path}:{n} has no 'messages' key; each line is {{\"messages\": [{{\"role\": ..., "
                                 "\"content\": ...}, ...], ...}}")
            row.setdefault("_where", f"{path}:{n}")
            rows.append(row)
    return rows


def _hf_dataset(path: Path) -> list[dict[str, Any]]:
    try:
        import datasets
    except ImportError as exc:
        raise DemosError(f"{path} is a Hugging Face dataset folder; reading it needs the datasets package "
                         "(pip install datasets), or export it to JSONL") from exc
    data = datasets.load_from_disk(str(path))
    if isinstance(data, datasets.DatasetDict):
        if "train" not in data:
            raise DemosError(f"{path} is a DatasetDict without a 'train' split (it has {', '.join(data)})")
        data = data["train"]
    if "messages" not in data.column_names:
        raise DemosError(f"{path} has no 'messages' column (columns: {', '.join(data.column_names)})")
    return [{**row, "_where": f"{path}[{i}]"} for i, row in enumerate(data)]


def check_not_held_out(rows: Sequence[dict[str, Any]], spec: Any, eval_split: str) -> None:
    """Refuse conversations recorded on *spec*'s env whose task id lies in the evaluation split."""
    if eval_split not in spec.splits:
        return
    held = set(spec.ids(eval_split))
    bad = [r for r in rows if r.get("env") == spec.name and r.get("task_id") is not None and int(r["task_id"]) in held]
    if bad:
        raise DemosError(f"{len(bad)} training conversations were recorded on held-out task ids of {spec.name!r} "
                         f"(split {eval_split!r}; e.g. {bad[0].get('_where', '')} task {bad[0]['task_id']}); training "
                         "on them would leak the evaluation. Record demonstrations from the train split")
