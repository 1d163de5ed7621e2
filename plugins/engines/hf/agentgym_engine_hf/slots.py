"""The static decode mode's slot table: which token sequence each KV slot holds, and how a
request gets a slot.

A slot holds the keys and values of one sequence (``ids``). While its request decodes it is
busy; afterwards, if the request named an episode (``cache_key``), the slot stays *parked*
with the episode's sequence, so the episode's next turn prefills only its new tokens. A free
slot keeps its sequence too, as a prefix other prompts may start from. A request that finds no
free slot takes the least recently used parked one; that episode moves to a compact copy
(*spilled*) and back into a slot on its next turn. What a request reuses follows the plain
path's rules (plain.py, with the helpers of common.py): an identical prompt admitted with it (prefilled once), else its
episode's own sequence, else the longest shared prefix worth sharing (at least
``MIN_SHARED_PREFIX`` tokens and a fifth of the prompt).
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import torch

from .common import PREFIX_CANDIDATES, common_prefix, worth_sharing
from .static import SlotKV


@dataclass
class Slot:
    index: int
    #: Tokens whose keys/values are valid at the slot's first ``len(ids)`` positions.
    ids: list[int] = field(default_factory=list)
    #: The episode parked here (or, while busy, the one its request belongs to).
    key: str | None = None
    job: Any = None
    tick: int = 0


@dataclass
class Spilled:
    ids: list[int]
    kv: list[tuple[torch.Tensor, torch.Tensor]]


@dataclass
class Plan:
    """How one admitted request fills its slot before it decodes."""

    job: Any
    slot: int
    #: Positions valid before its own prefill runs (the prefill runs ``prompt[reuse:]``).
    reuse: int = 0
    #: Prefill round: after the rounds of the same-wave request it starts from (*source*).
    round: int = 0
    source: Plan | None = None
    #: Identical prompt to *source*: copy its keys/values and logits, prefill nothing.
    twin: bool = False


class SlotTable:
    def __init__(self, slots: int, *, max_cached: int, share_prefixes: bool) -> None:
        self.slots = [Slot(i) for i in range(slots)]
        self.spilled: OrderedDict[str, Spilled] = OrderedDict()
        self.max_cached, self.share_prefixes = max_cached, share_prefixes
        self._ticks = 0

    def busy(self) -> list[Slot]:
        return [s for s in self.slots if s.job is not None]

    def tick(self) -> int:
        self._ticks += 1
        return self._ticks

    # -- admission ----------------------------------------------------------------------------
    def admit(self, jobs: list[Any], kv: SlotKV) -> tuple[list[Plan], list[Any]]:
        """Give each of *jobs* (in order) a slot and a plan; returns the plans and the jobs
        left waiting (every slot busy). Copies from slots and spilled episodes happen here;
        copies from requests of the same wave wait for their prefill round."""
        plans: list[Plan] = []
        wave: dict[tuple[int, ...], Plan] = {}
        taken: set[int] = set()
        for n, job in enumerate(jobs):
            key, prompt = job.request.cache_key, job.prompt
            limit = len(prompt) - 1  # at least one token runs, for the logits
            own = self._parked(key)
            spill = self.spilled.pop(key) if key is not None and own is None and key in self.spilled else None
            slot = own if own is not None else self._free(taken, kv)
            if slot is None:
                if spill is not None:
                    self.spilled[key] = spill
                return plans, jobs[n:]
            taken.add(slot.index)
            plan, twin = Plan(job, slot.index), wave.get(tuple(prompt))
            if twin is not None:
                plan.source, plan.twin, plan.round, plan.reuse = twin, True, twin.round + 1, len(prompt)
            elif own is not None:
                plan.reuse = common_prefix(slot.ids, prompt, limit)
            elif spill is not None:
                plan.reuse = common_prefix(spill.ids, prompt, limit)
                kv.put(slot.index, _prefix(spill.kv, plan.reuse))
            elif self.share_prefixes:
                reuse, donor = self._shared(prompt, limit, slot, taken, plans)
                plan.reuse = reuse
                if isinstance(donor, Plan):
                    plan.source, plan.round = donor, donor.round + 1
                elif isinstance(donor, Slot):
                    kv.copy(donor.index, slot.index, reuse)
                elif isinstance(donor, Spilled):
                    kv.put(slot.index, _prefix(donor.kv, reuse))
            wave.setdefault(tuple(prompt), plan)
            slot.ids, slot.job, slot.key, slot.tick = list(prompt), job, key, self.tick()
            plans.append(plan)
        return plans, []

    def _parked(self, key: str | None) -> Slot | None:
        if key is None:
            return None
        return next((s for s in self.slots if s.key == key and s.job is None), None)

    def _free(self, taken: set[int], kv: SlotKV) -> Slot | None:
        """The lowest free slot (keeps the decoded rows few), else the least recently used
        parked one, whose episode is spilled first."""
        idle = [s for s in self.slots if s.job is None and s.index not in taken]
        free = next((s for s in idle if s.key is None), None)
        if free is not None or not idle:
            return free
        victim = min(idle, key=lambda s: s.tick)
        if self.max_cached > 0:
            self.spilled[victim.key] = Spilled(list(victim.ids), kv.take(victim.index, len(victim.ids)))
            self._limit()
        victim.key = None
        return victim

    def _shared(self, prompt: list[int], limit: int, target: Slot, taken: set[int],
                plans: list[Plan]) -> tuple[int, Plan | Slot | Spilled | None]:
        """The longest usable prefix of *prompt* at hand: a prompt of this wave, a slot's
        sequence (the target's own old one needs no copy) or a spilled episode's."""
        slots = sorted((s for s in self.slots if s.ids and (s.index not in taken or s is target)),
                       key=lambda s: -s.tick)[:PREFIX_CANDIDATES]
        spilled = list(reversed(self.spilled.values()))[:PREFIX_CANDIDATES]
        best, donor = 0, None
        for cand, ids in [*((p, p.job.prompt) for p in plans), *((s, s.ids) for s in slots), *((s, s.ids) for s in spilled)]:
            n = common_prefix(ids, prompt, limit)
            if n > best and worth_sharing(n, len(prompt)):
                best, donor = n, cand
        return best, donor

    def compact(self) -> list[tuple[Slot, Slot]]:
        """Move the highest busy rows down into free slots below them, so a decode step runs
        over fewer rows; returns ``(from, to)`` pairs (the caller moves keys/values and state)."""
        moves = []
        free = [s for s in self.slots if s.job is None and s.key is None]
        busy = sorted(self.busy(), key=lambda s: -s.index)
        for src, dst in zip(busy, free):
            if dst.index > src.index:
                break
            dst.ids, dst.job, dst.key, dst.tick = src.ids, src.job, src.key, src.tick
            src.job, src.key = None, None  # keeps its ids: the prompt's keys/values are still there
            moves.append((src, dst))
        return moves

    # -- after decoding -----------------------------------------------------------------------
    def finish(self, slot: Slot, ids: list[int], keep: bool) -> None:
        """*slot*'s request is done and its keys/values hold *ids*: park its episode if *keep*."""
        slot.job, slot.ids, slot.tick = None, ids, self.tick()
        if not (keep and self.max_cached > 0):
            slot.key = None
        self._limit()

    def _limit(self) -> None:
        """At most ``max_cached`` episodes kept, parked and spilled together (oldest dropped first)."""
        parked = sorted((s for s in self.slots if s.key is not None and s.job is None), key=lambda s: s.tick)
        while self.spilled and len(parked) + len(self.spilled) > self.max_cached:
            self.spilled.popitem(last=False)
        while parked and len(parked) > self.max_cached:
            parked.pop(0).key = None

    def release(self, key: str) -> None:
        self.spilled.pop(key, None)
        for s in self.slots:
            if s.key == key:
                if s.job is not None:
                    s.job.released = True
                else:
                    s.key = None

    def clear(self) -> None:
        """Forget every idle sequence (the weights changed: their keys/values are stale)."""
        self.spilled.clear()
        for s in self.slots:
            if s.job is None:
                s.ids, s.key = [], None


def _prefix(kv: list[tuple[torch.Tensor, torch.Tensor]], n: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [(k[:, :n], v[:, :n]) for k, v in kv]
