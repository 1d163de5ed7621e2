"""The rollout worker of an asynchronous run (:mod:`.asynchronous`): a thread with its own event loop, env
pool and engine that plays the steps' task groups while the trainer updates."""
from __future__ import annotations

import asyncio
import collections
import threading
import time
import zlib
from typing import Any, Callable, Optional

from .asynchronous import Played, Stalled, VersionedEngine, WeightStore, WorkerError


class RolloutWorker:
    """Plays the steps' task groups in a thread of its own (see the module docstring).

    *trainer* is the :class:`~agentgym_trainer_rl.trainer.RLTrainer`: its config, plugin manager,
    rank, scheduler (read only: ``max_turns``) and tokenizer are used, nothing of it is written.
    *engine_model* is the worker's own copy of the policy in the engine's dtype
    (:func:`agentgym_hf.training.engine_copy`), at weights version *version*. Steps ``first ..
    total - 1`` are played, except the *pending* ones (played before a resume, read from the
    checkpoint). *cursor_state* is the task cursor after step ``first - 1``'s ids.
    """

    def __init__(self, trainer: Any, engine_model: Any, *, first: int, total: int, version: int,
                 pending: dict[int, Played], cursor_state: dict) -> None:
        from agentgym_core import TaskCursor

        tc = trainer.settings
        self.config, self.manager = trainer.config, trainer.manager
        self.rank, self.world = trainer.rank, trainer.world
        self.scheduler, self.tokenizer = trainer.scheduler, trainer.tokenizer
        self.settings = tc
        self.k, self.mode, self.partial = int(tc.max_staleness), tc.async_mode, tc.partial_rollout
        self.dynamic = bool(tc.dynamic_sampling)  # (pipelined only: the config refuses it in the async mode)
        self.watchdog, self.threads = float(tc.watchdog_s), int(tc.rollout_threads)
        self.engine_model = engine_model
        self.first, self.total = first, total
        self.store = WeightStore(version)
        self.cursor = TaskCursor(list(trainer.parts.env.ids("train")), trainer.config.run.seed)
        self.cursor.load_state_dict(cursor_state)
        self._ready: dict[int, Played] = dict(pending)  # pipelined: by step
        self._groups: collections.deque = collections.deque()  # async: complete groups, oldest first
        self._cond = threading.Condition()
        self._error: Optional[BaseException] = None
        self._stop = threading.Event()
        #: Seconds the worker waited for weights, and spent playing, since the trainer last asked.
        self.idle_s = self.busy_s = 0.0
        self.engine: Optional[VersionedEngine] = None
        self.dropped = 0  # stale episodes dropped so far (async mode)
        self._owed = 0  # async: groups dropped as stale that the worker has not yet started a replacement for
        self._thread = threading.Thread(target=self._main, name="agentgym-rollout", daemon=True)

    # -- the trainer's side --------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def take(self, step: int, stale: Callable[[list], list] = lambda trajs: trajs) -> Played:
        """The batch of *step*. Blocks until the worker has it; :class:`Stalled` when nothing arrives
        for ``trainer.watchdog_s`` seconds, :class:`WorkerError` when the worker failed.

        async: the oldest complete groups, this rank's share of ``rollout.tasks_per_step``, renumbered
        0..n-1; *stale* filters each group as it is taken (a dropped one is replaced by the next)."""
        deadline = time.monotonic() + self.watchdog
        taken: list[list] = []
        want = len(range(self.rank, int(self.config.rollout.tasks_per_step), self.world))
        with self._cond:
            while True:
                if self._error is not None:
                    raise WorkerError(f"the rollout worker failed: {type(self._error).__name__}: "
                                      f"{self._error}") from self._error
                if self.mode == "pipelined" and step in self._ready:
                    return self._ready.pop(step)
                while self.mode == "async" and self._groups and len(taken) < want:
                    group = stale(self._groups.popleft())
                    if group:
                        taken.append(group)
                        deadline = time.monotonic() + self.watchdog
                    else:  # the worker plays one more group in its place
                        self._owed += 1
                        self._cond.notify_all()
                if taken and len(taken) == want:
                    return self._batch(step, taken)
                if not self._thread.is_alive():
                    raise WorkerError(f"the rollout worker ended before the batch of step {step + 1}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Stalled(f"step {step + 1}: the trainer waited {self.watchdog:.0f} s for the rollout worker "
                                  f"(weights published up to version {self.store.latest}, the worker's engine at "
                                  f"{self.engine.version if self.engine else 'none'}): the rollout side is stuck (an env "
                                  "or the engine); trainer.watchdog_s sets the limit")
                self._cond.wait(min(left, 1.0))

    def _batch(self, step: int, groups: list[list]) -> Played:
        trajs = []
        for n, group in enumerate(groups):
            for t in group:
                t.group_id = n * self.world + self.rank  # (task groups are numbered per step, across ranks)
                t.step = step + 1
                trajs.append(t)
        return Played(step, trajs, {}, max(t.max_turns for t in trajs))

    def publish(self, version: int, state: Optional[dict]) -> None:
        self.store.publish(version, state)

    def pending_from(self, step: int) -> dict[int, Played]:
        """pipelined: the batches of steps ``step .. step + K - 1``, waited for. A checkpoint after step
        ``step - 1`` saves them: they were sampled by versions older than its weights."""
        out = {s: self.take(s) for s in range(step, min(step + self.k, self.total))}
        with self._cond:  # back where take() found them
            self._ready.update(out)
        return out

    def timing(self) -> tuple[float, float, float]:
        """(idle, busy, weight-loading) seconds of the worker since the last call."""
        with self._cond:
            idle, busy = self.idle_s, self.busy_s
            self.idle_s = self.busy_s = 0.0
        load = self.engine.load_s if self.engine is not None else 0.0
        if self.engine is not None:
            self.engine.load_s = 0.0
        return idle, busy, load

    def close(self) -> None:
        self._stop.set()
        self.store.close()
        with self._cond:
            self._cond.notify_all()
        if self._thread.ident is not None:
            self._thread.join(timeout=120)

    # -- the worker's side ---------------------------------------------------------------------
    def _main(self) -> None:
        import torch

        from agentgym_core import assemble

        if self.threads > 0:  # this thread's torch ops (the trainer's thread keeps its own count)
            torch.set_num_threads(self.threads)
        loop = asyncio.new_event_loop()
        parts = None
        try:
            parts = loop.run_until_complete(assemble(self.config, self.manager,
                                                     local=bool(self.config.trainer.local_envs)))
            parts.load_engine(self.engine_model, self.tokenizer, own_weights=True)
            self.engine = VersionedEngine(parts.engine, self.store, self.store.latest, follow=self.mode == "async")
            parts.engine = self.engine
            if self.mode == "pipelined":
                self._pipelined(loop, parts)
            else:
                loop.run_until_complete(self._stream(parts))
        except BaseException as exc:  # noqa: BLE001 - handed to the trainer
            if not self._stop.is_set():
                with self._cond:
                    self._error = exc
                    self._cond.notify_all()
        finally:
            try:
                if parts is not None:
                    if self.engine is not None:
                        parts.engine = self.engine.engine
                    loop.run_until_complete(parts.aclose())
            finally:
                loop.close()

    def _tasks(self, step: int) -> list[tuple[int, int]]:
        """This rank's ``(task_id, group)`` entries for *step*, as the synchronous trainer plays them."""
        ids = self.cursor.take(self.config.rollout.tasks_per_step)
        mine = [(tid, g) for g, tid in enumerate(ids) if g % self.world == self.rank]
        return [(tid, g) for tid, g in mine for _ in range(self.config.rollout.group_size)]

    def _seed(self, step: int) -> int:
        return zlib.crc32(f"{self.config.run.seed}/{step}/{self.rank}".encode())

    def _account(self, idle: float, busy: float) -> None:
        with self._cond:
            self.idle_s += idle
            self.busy_s += busy

    def _pipelined(self, loop: asyncio.AbstractEventLoop, parts: Any) -> None:
        from agentgym_core.rollout import rollout

        for step in range(self.first, self.total):
            tasks = self._tasks(step)  # (taken for a pending step too: the cursor moves on the same way)
            if step in self._ready:
                self.cursor.take(self._ready[step].extra_ids)
                continue
            need = max(0, step - self.k)
            t0 = time.perf_counter()
            self.store.wait_for(need, self.watchdog, self._stop.is_set)
            if self._stop.is_set():
                return
            self.engine.load(need)
            t1 = time.perf_counter()
            horizon = int(self.scheduler.max_turns(step))
            stats: dict[str, Any] = {}
            trajs = loop.run_until_complete(rollout(parts, tasks, max_turns=horizon, step=step + 1,
                                                    seed=self._seed(step), stats=stats))
            parts.score(trajs)
            for t in trajs:
                t.step = step + 1
            extra_ids = rounds = 0
            if self.dynamic:
                trajs, extra_ids, rounds = self._refill(loop, parts, trajs, step, horizon)
            t2 = time.perf_counter()
            self._account(t1 - t0, t2 - t1)
            with self._cond:
                self._ready[step] = Played(step, trajs, stats, horizon, waited_s=t1 - t0, played_s=t2 - t1,
                                           extra_ids=extra_ids, rounds=rounds)
                self._cond.notify_all()

    def _refill(self, loop: asyncio.AbstractEventLoop, parts: Any, trajs: list, step: int,
                horizon: int) -> tuple[list, int, int]:
        """Dynamic sampling in the pipelined mode: the extra rounds the synchronous trainer would play for *step*
        (:meth:`RLTrainer._dynamic_sampling`: the same task ids, group numbers and seeds), by this batch's
        weights version. Returns every episode played, the extra task ids taken and the rounds."""
        from agentgym_core.rollout import rollout

        from .sampling import informative_groups

        tc, wanted, size = self.settings, int(self.config.rollout.tasks_per_step), int(self.config.rollout.group_size)
        played, groups, rounds = list(trajs), wanted, 0
        kept = informative_groups(played, tc.credit)
        while len(kept) < wanted and rounds < tc.dynamic_sampling_rounds:
            rounds += 1
            ids = self.cursor.take(wanted - len(kept))
            tasks = [(tid, groups + g) for g, tid in enumerate(ids) for _ in range(size)]
            seed = zlib.crc32(f"{self.config.run.seed}/{step}/{self.rank}/{rounds}".encode())
            more = loop.run_until_complete(rollout(parts, tasks, max_turns=horizon, step=step + 1, seed=seed, stats={}))
            parts.score(more)
            for t in more:
                t.step = step + 1
            groups += len(ids)
            played += more
            kept = informative_groups(played, tc.credit)
        return played, groups - wanted, rounds

    async def _stream(self, parts: Any) -> None:
        """async: ``rollout.concurrency`` episodes in flight at all times; a group goes to the trainer when
        its last episode ends; no group is started for step ``s`` before version ``s - K`` exists."""
        from agentgym_core import EpisodeLoop, GenerationBatcher, Task

        cfg, agent, strategy = self.config, parts.agent, parts.strategy
        size = int(cfg.rollout.group_size)
        batcher = GenerationBatcher(self.engine)
        slots = asyncio.Semaphore(int(agent.concurrency))
        playing: set[asyncio.Future] = set()
        failure: list[BaseException] = []

        async def group(episodes: Any, index: int, task_id: int) -> None:
            async def one(i: int) -> list:
                async with slots:
                    while True:  # restart: play again until one version sampled the whole episode
                        played = await strategy.play(episodes, Task(index * size + i, task_id, 0))
                        versions = {turn.version for t in played for turn in t.turns}
                        if self.partial != "restart" or len(versions) <= 1:
                            return played

            try:
                start = time.perf_counter()
                trajs = [t for attempts in await asyncio.gather(*(one(i) for i in range(size))) for t in attempts]
                parts.score(trajs)
                self._account(0.0, time.perf_counter() - start)
                with self._cond:
                    self._groups.append(trajs)
                    self._cond.notify_all()
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # noqa: BLE001 - ends the worker
                failure.append(exc)

        def start(episodes: Any, tasks: list[int], first: int = 0) -> None:
            for n, task_id in enumerate(tasks, first):
                job = asyncio.ensure_future(group(episodes, n, task_id))
                playing.add(job)
                job.add_done_callback(playing.discard)

        def replace(step: int) -> None:
            """Start a group in place of each one the trainer dropped as stale since the last call: the next task
            ids, at *step*'s horizon and by the newest weights (a drop at the last step still gets its group)."""
            nonlocal replaced
            with self._cond:
                owed, self._owed = self._owed, 0
            if owed:
                seed = zlib.crc32(f"{self.config.run.seed}/{step}/{self.rank}/replace/{replaced}".encode())
                # (numbered past the step's own groups: an episode id, the engine's cache key, is never reused)
                start(EpisodeLoop(parts, batcher, max_turns=int(self.scheduler.max_turns(step)), step=step + 1,
                                  temperature=float(agent.temperature), seed=seed), self.cursor.take(owed),
                      first=int(cfg.rollout.tasks_per_step) + replaced)
                replaced += owed

        replaced = 0
        try:
            for step in range(self.first, self.total):
                t0 = time.perf_counter()
                while self.store.latest < step - self.k and not self._stop.is_set() and not failure:
                    await asyncio.sleep(0.005)
                if self._stop.is_set() or failure:
                    break
                self._account(time.perf_counter() - t0, 0.0)
                replace(step)
                episodes = EpisodeLoop(parts, batcher, max_turns=int(self.scheduler.max_turns(step)), step=step + 1,
                                       temperature=float(agent.temperature), seed=self._seed(step))
                start(episodes, list(dict.fromkeys(t for t, _ in self._tasks(step))))
                while len(playing) > int(agent.concurrency) // size + 1 and not failure and not self._stop.is_set():
                    await asyncio.sleep(0.005)  # start the next step's groups once slots are about to free
                    replace(step)
            # every step's groups are started: play them out, and replacements, until the trainer has its last
            # batch (it closes the worker then; a group it drops at the last step is replaced, not missing)
            while not failure and not self._stop.is_set():
                replace(self.total - 1)
                await asyncio.sleep(0.01)
            if failure:
                raise failure[0]
        finally:
            for job in list(playing):
                job.cancel()
            await asyncio.gather(*playing, return_exceptions=True)
            await batcher.aclose()
