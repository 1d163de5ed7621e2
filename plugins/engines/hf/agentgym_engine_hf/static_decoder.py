"""The static decoder (``engine.decode: static``): an engine thread batching continuously over KV slots.

Requests queue up (:meth:`StaticDecoder.submit`, or a whole ``generate`` call at once); one
thread owns the device state and loops: every ``sync_every`` decode steps it reads the new
tokens back (one transfer), checks stop strings, finishes the requests that are done (their
slots park the episode's keys and values), and admits waiting requests into free slots, so a
slot never idles until a whole batch drains. Requests admitted together are prefilled together.

Anything that makes the static path unusable (an attention implementation it cannot mask, a
self-check against a plain forward that disagrees, a CUDA graph that fails to capture or to
match the eager step) switches the engine to its plain path for good, with one warning, and
the requests in flight start over there: never a wrong token.
"""
from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import torch

from agentgym_core import GenerationRequest, GenerationResult, phase

from .common import DecodeTarget, check_request, eval_mode, hits_stop
from .graphs import CudaBackend, GraphFailure, StepGraphs, batch_bucket, length_bucket
from .sampling import mode_of
from .slots import SlotTable
from .static import SlotKV, StaticUnusable, StepState, check_model, decode_step, prefill

log = logging.getLogger("agentgym.engine.hf")

#: Padded tokens one prefill forward may run, on a CPU and on a GPU.
PREFILL_TOKENS = {"cpu": 4096, "cuda": 16384}
#: First slot capacity (positions); buffers double as longer requests arrive.
FIRST_CAPACITY = 256


@dataclass
class _Job:
    request: GenerationRequest
    future: Future
    prompt: list[int]
    stop_ids: list[int]
    seed: int
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    prefill: int = 0
    read: int = 0  # tokens copied back from the device ring
    released: bool = False


class StaticDecoder:
    """Generates with *target*'s model in *slots* KV slots of at most *slot_tokens* positions (0:
    the model's ``max_position_embeddings``). *fallback* generates a batch on the plain path
    (:meth:`PlainDecoder.generate <agentgym_engine_hf.plain.PlainDecoder.generate>`), at most
    *fallback_batch* requests at a time: it takes over for good if the static path proves unusable."""

    def __init__(self, target: DecodeTarget, *, fallback: Callable[[list[GenerationRequest]], list[GenerationResult]],
                 fallback_batch: int, slots: int, slot_tokens: int, sync_every: int, cuda_graphs: bool,
                 max_cached_episodes: int, share_prefixes: bool) -> None:
        self.target = target
        self.model = target.model
        self.fallback, self.fallback_batch = fallback, fallback_batch
        config = self.model.config.get_text_config() if hasattr(self.model.config, "get_text_config") else self.model.config
        self.layers = int(config.num_hidden_layers)
        cuda = target.device.type == "cuda"
        self.sync_every = sync_every or (16 if cuda else 1)
        limit = slot_tokens or int(getattr(config, "max_position_embeddings", 0) or 8192)
        self.kv = SlotKV(slots, min(FIRST_CAPACITY, limit + 1), limit + 1)
        self.table = SlotTable(slots, max_cached=max_cached_episodes, share_prefixes=share_prefixes)
        self._config = config
        #: Makes the graph backend (None: the step runs eagerly); tests put a CPU stand-in here.
        self.backend_factory = CudaBackend if cuda_graphs and cuda else None
        self.state: StepState | None = None
        self.graphs: StepGraphs | None = None
        self.impl = str(getattr(self.model.config, "_attn_implementation", None) or "eager")
        #: Why the static path was given up (None: it runs).
        self.broken: str | None = None
        self.cpu_seconds = 0.0  # CPU time of the engine thread
        self.steps = 0
        self.row_steps = 0  # rows the decode steps ran over (busy or not), summed
        self._queue: deque[_Job] = deque()
        self._commands: list[tuple[str, Any]] = []
        self._cv = threading.Condition()
        self._busy = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closing = False
        self._weights: tuple[int, ...] = ()
        self._cpu_mark = 0.0

    # -- any thread -----------------------------------------------------------------------------
    def submit(self, requests: list[GenerationRequest]) -> list[Future]:
        """Queue *requests* together (admitted in this order); one future per request."""
        jobs = [self._job(r) for r in requests]
        with self._cv:
            if self._closing:
                raise RuntimeError("the engine is closed")
            self._queue.extend(jobs)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="agentgym-hf-static", daemon=True)
                self._thread.start()
            self._cv.notify()
        return [j.future for j in jobs]

    def generate(self, requests: list[GenerationRequest]) -> list[GenerationResult]:
        return [f.result() for f in self.submit(requests)]

    def release(self, key: str) -> None:
        """Never blocks (rollout calls it from its event loop); applied before the next admission."""
        self._command("release", key)

    def clear(self) -> None:
        self._command("clear", None)

    @contextlib.contextmanager
    def idle(self) -> Iterator[None]:
        """Hold the engine thread between busy periods (to change the weights under it)."""
        with self._busy:
            yield

    def close(self) -> None:
        """Stop the engine thread and free the slots (a later request starts both again)."""
        with self._cv:
            self._closing = True
            self._cv.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=60)
        with self._busy, self._cv:
            self._closing, self._thread = False, None
            self.state = self.graphs = None
            self.kv.layers = []
            for slot in self.table.slots:
                slot.ids, slot.key = [], None
            self.table.spilled.clear()

    def _command(self, name: str, arg: Any) -> None:
        with self._cv:
            self._commands.append((name, arg))
            self._cv.notify()

    def _job(self, req: GenerationRequest) -> _Job:
        check_request(list(req.prompt_ids), req.params)
        seed = self.target.seed(req.params)
        return _Job(req, Future(), list(req.prompt_ids), sorted(self.target.stop_ids(req.params)), int(seed))

    # -- the engine thread ----------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cv:
                while not (self._queue or self._commands or self._closing):
                    self._cv.wait()
                if self._closing:
                    self._fail(self._take_queue(), RuntimeError("the engine was closed"))
                    return
            with self._busy:
                self._cpu_mark = time.thread_time()
                try:
                    if self.broken is None:
                        try:
                            self._run_static()
                        except (StaticUnusable, GraphFailure) as exc:
                            self._fall_back(str(exc))
                    if self.broken is not None:
                        self._run_plain()
                except BaseException as exc:  # noqa: BLE001 - every waiting request learns of it
                    jobs = [s.job for s in self.table.busy()] + self._take_queue()
                    for s in self.table.busy():
                        s.job, s.ids, s.key = None, [], None
                    if self.state is not None:
                        self.state.active.zero_()
                    self._fail(jobs, exc)
                finally:
                    self._count_cpu()

    def _run_static(self) -> None:
        device = self.target.device
        on_device = torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()
        with on_device, torch.no_grad(), eval_mode(self.model):
            if self.state is None:
                self._setup()
            weights = tuple(p.data_ptr() for p in self.model.parameters())
            if weights != self._weights:  # graphs point at the old tensors
                self.graphs.reset()
                self._weights = weights
            while True:
                if not self.table.busy() and device.type == "cuda":
                    self._gather()
                self._sync()
                if not self.table.busy():
                    with self._cv:
                        if not self._queue and not self._commands:
                            return
                    continue
                self._steps()

    def _gather(self, most: float = 0.02) -> None:
        """Starting from idle on a GPU, let requests that are arriving one by one (episodes
        finishing their env step) queue up for up to *most* seconds: one prefill for all of
        them instead of many small ones, each as slow as a whole wave on a launch-bound GPU."""
        end, seen = time.monotonic() + most, -1
        while time.monotonic() < end:
            with self._cv:
                n = len(self._queue)
            if n == seen or n >= len(self.table.slots):
                return
            seen = n
            time.sleep(0.002)

    def _run_plain(self) -> None:
        while True:
            with self._cv:
                self._commands = []  # the plain path keeps its own cache (engine.release clears it)
                jobs = [self._queue.popleft() for _ in range(min(len(self._queue), self.fallback_batch))]
            jobs = [j for j in jobs if j.future.running() or j.future.set_running_or_notify_cancel()]
            if not jobs:
                if self._queue:
                    continue
                return
            try:
                results = self.fallback([j.request for j in jobs])
            except BaseException as exc:  # noqa: BLE001
                self._fail(jobs, exc)
                continue
            for job, res in zip(jobs, results):
                job.future.set_result(res)

    def _fall_back(self, reason: str) -> None:
        """Give up the static path: warn once; requests in flight start over on the plain path."""
        self.broken = reason
        log.warning("engine.decode=static: %s; using the plain decode path from now on", reason)
        restart = [s.job for s in self.table.busy()]
        for s in self.table.slots:
            s.job, s.ids, s.key = None, [], None
        self.table.spilled.clear()
        self.state = self.graphs = None
        self.kv.layers = []
        with self._cv:
            self._queue.extendleft(reversed(restart))

    def _count_cpu(self) -> None:
        now = time.thread_time()
        self.cpu_seconds += now - self._cpu_mark
        self._cpu_mark = now

    def _take_queue(self) -> list[_Job]:
        with self._cv:
            jobs, self._queue = list(self._queue), deque()
        return jobs

    @staticmethod
    def _fail(jobs: list[_Job], exc: BaseException) -> None:
        for job in jobs:
            if not job.future.done():
                job.future.set_exception(exc)

    # -- setting up ----------------------------------------------------------------------------
    def _setup(self) -> None:
        vocab = check_model(self.model, self._config, self.target.tokenizer, cache_arg=self.target.cache_arg,
                            kv=self.kv, layers=self.layers, impl=self.impl)
        self.state = StepState(len(self.table.slots), vocab, self.sync_every, 8, self.target.device)
        self.graphs = StepGraphs(self.backend_factory() if self.backend_factory else None, self.state)

    # -- a sync point: read back, finish, admit --------------------------------------------------
    def _sync(self) -> None:
        st = self.state
        busy, done, stopped = self.table.busy(), [], []
        if busy:
            n = max(s.index for s in busy) + 1
            count, active = st.count[:n].tolist(), st.active[:n].tolist()
            tokens, logprobs = st.ring_tokens[:n].tolist(), st.ring_logprobs[:n].tolist()
            for slot in busy:
                job, i = slot.job, slot.index
                finish = self._read(job, tokens[i], logprobs[i], count[i])
                if finish is None and not active[i]:
                    raise RuntimeError(f"slot {i} stopped on the device but not on the host (engine bug)")
                if finish is not None:
                    done.append((slot, finish))
                    if active[i]:
                        stopped.append(i)
            if stopped:  # a stop string: the device would go on
                st.active[torch.tensor(stopped, device=st.active.device)] = False
            self._count_cpu()  # up to date before anyone learns a request is done
            for slot, finish in done:
                job = slot.job
                key = job.request.cache_key
                self.table.finish(slot, job.prompt + job.tokens, keep=key is not None and not job.released)
                job.future.set_result(GenerationResult(token_ids=job.tokens, logprobs=job.logprobs,
                                                       finish_reason=finish, prefill_tokens=job.prefill))
        with self._cv:  # commands and arrivals together: a release sent before a request applies first
            commands, self._commands = self._commands, []
            waiting, self._queue = list(self._queue), deque()
        for name, arg in commands:
            if name == "release":
                self.table.release(arg)
            else:
                self.table.clear()
        if waiting:
            left = self._admit(waiting)
            with self._cv:
                self._queue.extendleft(reversed(left))
        self._compact()

    def _compact(self) -> None:
        """Fill holes below the highest busy slot with the highest busy rows (a copy of their
        keys/values so far), so a step covers only as many rows as are busy."""
        moves = self.table.compact()
        if not moves:
            return
        for src, dst in moves:
            self.kv.copy(src.index, dst.index, len(dst.job.prompt) + dst.job.read)
        dev = self.state.pos.device
        self.state.move(torch.tensor([s.index for s, _ in moves], device=dev), torch.tensor([d.index for _, d in moves], device=dev))

    def _read(self, job: _Job, tokens: list[int], logprobs: list[float], count: int) -> str | None:
        """Take a row's new tokens from the ring, stopping where the plain path would: a stop
        id, a stop string (the tokens after it are dropped), or max_new_tokens."""
        params, stops = job.request.params, job.request.params.stop_strings
        finish = None
        for t in range(job.read, count):
            token = tokens[t % self.sync_every]
            job.tokens.append(token)
            job.logprobs.append(logprobs[t % self.sync_every])
            if token in job.stop_ids or stops and hits_stop(self.target.tokenizer, job.tokens, stops):
                finish = "stop"
            elif len(job.tokens) >= params.max_new_tokens:
                finish = "length"
            if finish:
                break
        job.read = count
        return finish

    def _admit(self, jobs: list[_Job]) -> list[_Job]:
        """Admit what fits (returns the rest): plan slots, prefill round by round, arm the rows."""
        st, fits = self.state, []
        for job in jobs:
            if not job.future.running() and not job.future.set_running_or_notify_cancel():
                continue  # cancelled while waiting
            try:
                if self.kv.ensure(len(job.prompt) + job.request.params.max_new_tokens):
                    self.graphs.reset()
            except ValueError as exc:
                job.future.set_exception(exc)
                continue
            fits.append(job)
        plans, left = self.table.admit(fits, self.kv)
        if not plans:
            return left
        run = dict(model=self.model, cache_arg=self.target.cache_arg, kv=self.kv, layers=self.layers, impl=self.impl, st=st)
        for r in range(max(p.round for p in plans) + 1):
            for p in plans:
                if p.round == r and p.source is not None:
                    self.kv.copy(p.source.slot, p.slot, p.reuse)
                    if p.twin:
                        st.logits[p.slot] = st.logits[p.source.slot]
            rows = [(p.slot, p.job.prompt[p.reuse:], p.reuse) for p in plans if p.round == r and not p.twin]
            if rows:
                prefill(**run, rows=rows, budget=PREFILL_TOKENS.get(self.target.device.type, 4096))
        width = max(len(p.job.stop_ids) for p in plans)
        if width > st.stop_ids.shape[1]:
            st.widen_stops(width)
            self.graphs.reset()
        st.arm([p.slot for p in plans], [len(p.job.prompt) for p in plans], [p.job.request.params for p in plans],
               [p.job.seed for p in plans], [p.job.stop_ids for p in plans])
        for p in plans:
            p.job.prefill = 0 if p.twin else len(p.job.prompt) - p.reuse
        return left

    # -- decoding ---------------------------------------------------------------------------------
    def _steps(self) -> None:
        """Up to ``sync_every`` decode steps over the busy slots (fewer when every row hits
        max_new_tokens sooner)."""
        busy = self.table.busy()
        jobs = [s.job for s in busy]
        rows = max(s.index for s in busy) + 1
        batch = batch_bucket(rows, len(self.table.slots)) if self.graphs.active else rows  # eager: no shapes to reuse
        mode = mode_of([j.request.params.temperature for j in jobs], [j.request.params.top_p for j in jobs])
        steps = min(self.sync_every, max(j.request.params.max_new_tokens - j.read for j in jobs))
        top = max(len(j.prompt) + j.read for j in jobs)  # the highest position written next
        run = dict(model=self.model, cache_arg=self.target.cache_arg, kv=self.kv, layers=self.layers, impl=self.impl,
                   st=self.state, batch=batch, mode=mode)
        for k in range(steps):
            length = length_bucket(top + k + 1, self.kv.capacity, self.graphs.active)
            key = (batch, length, mode, self.kv.version, self.state.stop_ids.shape[1])
            with phase("decode", tokens=batch, attended=batch * length, head=batch):
                self.graphs.run(key, lambda may_sync, length=length: decode_step(**run, length=length,
                                                                                  may_sync=may_sync), batch)
            self.steps += 1
            self.row_steps += batch
