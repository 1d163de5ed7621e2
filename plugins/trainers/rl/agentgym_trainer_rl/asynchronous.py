"""Training that never waits: a rollout worker plays while the trainer updates (``trainer.max_staleness``).

With ``trainer.max_staleness: K`` > 0 the rl trainer no longer alternates. A
:class:`RolloutWorker` (a thread of its own, with its own event loop, env pool and engine: a
copy of the policy's weights) plays task groups; the trainer takes each step's batch from it,
updates, and publishes the new weights as version ``step + 1`` in a :class:`WeightStore`. Every
generated token is stamped with the version that sampled it (``Turn.version``), and no token
used in the update of step ``s`` (which updates version ``s``) is older than version ``s - K``:
the worker never starts a batch before its version exists, and the trainer checks each episode
again when it takes it (:func:`stale_groups`), dropping and counting what is too old.

Two modes (``trainer.async_mode``):

* ``pipelined`` (default): a fixed schedule. Batch ``s`` is sampled by exactly version
  ``max(0, s - K)``, with the same task ids and seeds as the synchronous run, whatever the
  timing: a run reproduces itself bit for bit, and resumes exactly (the batches played ahead
  are saved with each checkpoint, :data:`PENDING`).
* ``async``: take whatever is ready. The worker streams: each finished episode frees its slot
  for the next task at once, groups go to the trainer as they complete (a step never waits for
  a straggler), and the engine loads the newest weights between generation calls. An episode in
  flight when the weights change continues with them (``trainer.partial_rollout: continue``;
  each turn keeps its version and the log-probs of the version that sampled it) or is played
  again from its start with the new ones (``restart``). Not reproducible: what is ready depends
  on timing.

``K = 0`` is the synchronous trainer itself: no worker is started.

The update corrects for the behaviour policy as the decoupled PPO objective does (Hilton et al.
2022, "Batch size-invariance for policy optimization"; AReaL, Fu et al. 2025): the ratio is
clipped against the proximal policy ``pi_prox`` (the trainer's weights before this update) and
the token's loss is weighted by ``min(pi_prox / pi_behav, tis_cap)``, ``pi_behav`` being the
recorded sampler log-probs (:class:`.update.Updater`; ``tis_cap`` 2 unless set). With ``K = 0``
and one pass this is today's objective exactly.
"""
from __future__ import annotations

import collections
import dataclasses
import json
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

#: The batches played ahead of a checkpoint, saved in it (pipelined mode): ``pending/step_XXXXXX.jsonl``.
PENDING = "pending"


class WorkerError(RuntimeError):
    """The rollout worker stopped on an error; the trainer re-raises it with the worker's traceback."""


class Stalled(RuntimeError):
    """Nothing moved for ``trainer.watchdog_s`` seconds: the message names the side that waited."""


@dataclasses.dataclass
class Played:
    """A batch the worker played for step :attr:`step`: scored trajectories and what it cost."""

    step: int
    trajectories: list
    stats: dict
    horizon: int
    #: Seconds the worker waited for weights before it could play this batch.
    waited_s: float = 0.0
    #: Seconds the worker spent playing it (rollout wall time).
    played_s: float = 0.0
    #: Dynamic sampling (pipelined): task ids taken beyond ``rollout.tasks_per_step``, in extra rounds.
    extra_ids: int = 0
    rounds: int = 0


class WeightStore:
    """The policy's weights by version, from the trainer to the worker's engine.

    Version ``v`` is the policy after ``v`` updates. The trainer :meth:`publish`\\ es each one as the
    tensors an update can change (a LoRA run: the merged adapted layers; a full fine-tune: every
    weight), already in the engine's dtype; ``None``: nothing changed since the previous version.
    The worker :meth:`wait_for`\\ s a version (pipelined) or follows the newest (async); versions
    nobody can need any more are dropped (:meth:`forget_below`), so at most ``K + 1`` are held.
    """

    def __init__(self, first: int) -> None:
        self._cond = threading.Condition()
        self._states: dict[int, Optional[dict]] = {first: None}  # None: the weights the engine started with
        self.latest = first
        self.closed = False

    def publish(self, version: int, state: Optional[dict]) -> None:
        with self._cond:
            self._states[version] = state if state is not None else self._states.get(version - 1)
            self.latest = max(self.latest, version)
            self._cond.notify_all()

    def wait_for(self, version: int, timeout: float, stopped: Callable[[], bool]) -> None:
        """Block until *version* (or a newer one) is published; :class:`Stalled` after *timeout* s."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self.latest < version and not self.closed:
                if stopped():
                    return
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Stalled(f"the rollout worker waited {timeout:.0f} s for the trainer to publish weights "
                                  f"version {version} (it has {self.latest}): the trainer is stuck in its update "
                                  "(trainer.watchdog_s sets the limit)")
                self._cond.wait(min(left, 1.0))

    def state(self, version: int) -> Optional[dict]:
        with self._cond:
            return self._states.get(version)

    def forget_below(self, version: int) -> None:
        with self._cond:
            for v in [v for v in self._states if v < version]:
                del self._states[v]

    def close(self) -> None:
        with self._cond:
            self.closed = True
            self._cond.notify_all()


def stale_groups(trajectories: list, step: int, max_staleness: int) -> tuple[list, set[int], dict[int, int]]:
    """Split *trajectories* taken by step *step* into those it may train on and the groups it may not.

    A group is stale when any of its turns was sampled by a version older than ``step -
    max_staleness``; it is dropped whole (a group's baseline needs all its episodes). Returns (the
    episodes kept, the stale group ids, a histogram: staleness of each kept episode's oldest turn ->
    episodes)."""
    oldest: dict[int, int] = {}
    for t in trajectories:
        versions = [turn.version for turn in t.turns if turn.version is not None]
        if versions:
            oldest[t.group_id] = min(oldest.get(t.group_id, step), min(versions))
    stale = {g for g, v in oldest.items() if step - v > max_staleness}
    kept = [t for t in trajectories if t.group_id not in stale]
    hist: dict[int, int] = collections.Counter()
    for t in kept:
        versions = [turn.version for turn in t.turns if turn.version is not None]
        hist[step - min(versions) if versions else 0] += 1
    return kept, stale, dict(hist)


class VersionedEngine:
    """The worker's engine, stamping each result with the weights version that produced it
    (``GenerationResult.weight_version``, which becomes ``Turn.version``).

    Following (``async`` mode), it first loads the newest published weights when there are newer
    ones, between generation calls: the batcher calls ``generate`` from one thread, so nothing is
    generating then. Requests always come in batches (``supports_submit`` is off), so a weight change
    never lands inside a call."""

    supports_submit = False

    def __init__(self, engine: Any, store: WeightStore, version: int, *, follow: bool) -> None:
        self.engine, self.store, self.version, self.follow = engine, store, version, follow
        self._loaded: Optional[dict] = store.state(version)
        self.load_s = 0.0  # seconds spent loading weights
        self.loads = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)

    def load(self, version: int) -> None:
        """Hold the weights of *version* (a published one); what an older one held is forgotten."""
        if version == self.version:
            return
        state = self.store.state(version)
        start = time.perf_counter()
        if state is not None and state is not self._loaded:
            self.engine.update_weights(state)
            self.loads += 1
        self._loaded, self.version = state, version
        self.store.forget_below(version)
        self.load_s += time.perf_counter() - start

    def generate(self, requests: list) -> list:
        if self.follow:
            self.load(self.store.latest)
        version = self.version
        results = self.engine.generate(requests)
        for r in results:
            r.weight_version = version
        return results


def save_pending(checkpoint: Path, pending: dict[int, Played], rank: int) -> None:
    """Write the batches played ahead of a checkpoint (pipelined mode) into it: ``pending/rank<R>/``."""
    target = Path(checkpoint) / PENDING / f"rank{rank}"
    target.mkdir(parents=True, exist_ok=True)
    for step, played in pending.items():
        with open(target / f"step_{step:06d}.jsonl", "w", encoding="utf-8") as f:
            f.write(json.dumps({"step": step, "horizon": played.horizon, "stats": played.stats,
                                "extra_ids": played.extra_ids, "rounds": played.rounds}) + "\n")
            f.writelines(json.dumps(t.to_dict(), ensure_ascii=False, default=str) + "\n" for t in played.trajectories)


def load_pending(checkpoint: Path, rank: int) -> dict[int, Played]:
    """The batches :func:`save_pending` wrote into *checkpoint* for *rank* ({} when there are none)."""
    from agentgym_core import Trajectory

    out: dict[int, Played] = {}
    target = Path(checkpoint) / PENDING / f"rank{rank}"
    for path in sorted(target.glob("step_*.jsonl")) if target.is_dir() else []:
        lines = path.read_text(encoding="utf-8").splitlines()
        head = json.loads(lines[0])
        trajs = [Trajectory.from_dict(json.loads(line)) for line in lines[1:]]
        out[int(head["step"])] = Played(int(head["step"]), trajs, head.get("stats") or {}, int(head["horizon"]),
                                        extra_ids=int(head.get("extra_ids", 0)), rounds=int(head.get("rounds", 0)))
    return out


# -- the trainer's side (RLTrainer.train_step when trainer.max_staleness > 0) ------------------------------
def take_batch(trainer: Any, step: int) -> tuple[int, list, dict, dict[str, float]]:
    """This step's batch from the trainer's rollout worker (started on the first step it runs): the horizon,
    the episodes to train on, the rollout stats and the step's staleness metrics."""
    import torch

    from agentgym_hf.training import engine_copy

    from .worker import RolloutWorker

    tc, cfg = trainer.settings, trainer.config
    if trainer.worker is None:
        dtype = torch.bfloat16 if trainer.bf16 else torch.float32
        model = engine_copy(trainer.module.lm, dtype)
        device = cfg.engine.get("device")  # the worker's engine on a device of its own, when the config names one
        if device:
            model.to(device)
        trainer.worker = RolloutWorker(trainer, model, first=step,
                                       total=trainer.total_steps(), version=step, pending=trainer.pending,
                                       cursor_state=trainer.cursor.state_dict())
        trainer.worker.start()
    dropped: list[int] = []

    def fresh(group: list) -> list:
        kept, stale, _ = stale_groups(group, step, tc.max_staleness)
        if stale:
            dropped.append(len(group) - len(kept))
        return kept

    played = trainer.worker.take(step, fresh)
    ids = trainer.cursor.take(cfg.rollout.tasks_per_step)  # the trainer's cursor: what a checkpoint saves
    ids += trainer.cursor.take(played.extra_ids)  # dynamic sampling's extra rounds, taken as the worker took them
    if tc.async_mode == "pipelined":
        mine = sorted({tid for g, tid in enumerate(ids) if g % trainer.world == trainer.rank})
        got = sorted({t.task_id for t in played.trajectories})
        if got != mine:
            raise RuntimeError(f"step {step + 1}: the rollout worker played tasks {got}, not this step's {mine}")
    trajs, stale, hist = stale_groups(played.trajectories, step, tc.max_staleness)
    if stale:  # (a pipelined batch is never stale: this checks that the schedule held)
        raise RuntimeError(f"step {step + 1}: groups {sorted(stale)} were sampled more than "
                           f"trainer.max_staleness={tc.max_staleness} versions ago")
    trainer.worker.dropped += sum(dropped)
    ages = [age for age, n in hist.items() for _ in range(n)] or [0]
    metrics = {"staleness_mean": sum(ages) / len(ages), "staleness_max": float(max(ages)),
               **{f"staleness_{age}": float(n) for age, n in sorted(hist.items())},
               "stale_dropped": float(sum(dropped)), "stale_dropped_total": float(trainer.worker.dropped),
               "rollout_play_s": played.played_s}
    if tc.dynamic_sampling:
        metrics["sampling_rounds"] = float(played.rounds)
    return played.horizon, trajs, played.stats, metrics


def publish_weights(trainer: Any, step: int, updated: bool) -> float:
    """Hand the weights after step *step* to the worker as version ``step + 1`` (in the engine's dtype; a LoRA
    run: the merged adapted layers only); returns the seconds it took. After the last step the worker stops."""
    import torch

    from .policy import plain_state_dict

    start = time.perf_counter()
    state = None
    if updated:
        dtype = torch.bfloat16 if trainer.bf16 else torch.float32
        lora = trainer.settings.finetune == "lora"
        state = {k: v.to(dtype=dtype if v.is_floating_point() else v.dtype, copy=True)
                 for k, v in plain_state_dict(trainer.module.lm, adapted_only=lora).items()}
    trainer.worker.publish(step + 1, state)
    if step + 1 >= trainer.total_steps():
        trainer.worker.close()
    return time.perf_counter() - start


def async_metrics(worker: Any, sync_s: float, t0: float, t1: float, t2: float) -> dict[str, float]:
    """Who waited on whom in a step: the trainer's share of the step spent waiting for the batch, the worker's
    share spent waiting for weights, and the weight hand-over on both sides."""
    idle, busy, load = worker.timing()
    wall = max(t2 - t0, 1e-9)
    return {"trainer_idle_frac": (t1 - t0) / wall, "rollout_idle_frac": min(1.0, idle / wall), "rollout_busy_s": busy,
            "weight_sync_time_s": sync_s + load}
