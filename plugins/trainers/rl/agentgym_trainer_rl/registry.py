"""Each advantage estimator and each policy loss of the ``rl`` trainer, declared once.

Config validation (with "did you mean"), the default loss aggregation, the functions the updater
calls, the ``method=`` names of the seed-style API and the table in docs/training.md all read
these entries (as verl's ``register_adv_est`` / ``get_policy_loss_fn``); adding an estimator or a
loss is one function and one entry here. Torch-free: a function is an import string, imported on
first use, so that loading a config imports no torch.
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any, Callable, Generic, Iterator, Optional, TypeVar

from agentgym_core import did_you_mean


def _load(function: str) -> Callable[..., Any]:
    module, _, name = function.partition(":")
    return getattr(import_module(module), name)


@dataclass(frozen=True)
class Estimator:
    """An advantage estimator: ``(batch, EstimatorOptions, all_reduce) -> (advantages [B, L], returns or None)``."""

    name: str
    #: ``"module:function"``.
    function: str
    #: One line for the docs table.
    description: str
    #: Other names ``trainer.algorithm`` accepts.
    aliases: tuple[str, ...] = ()
    #: Compares the episodes of a task group (needs ``rollout.group_size`` > 1 for a baseline; reports
    #: lone groups; can credit each turn; dynamic sampling applies).
    grouped: bool = False
    #: Trains a value head on ``batch.returns`` (PPO).
    needs_critic: bool = False
    #: The loss aggregation of its paper, when ``trainer.loss_agg`` is null (None: token-mean).
    loss_agg: Optional[str] = None
    #: Spellings of the seed-style ``LLMAgent.train(method=...)`` besides the names (the first is shown).
    methods: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    @property
    def method(self) -> str:
        """How the docs and errors spell it for ``method=``."""
        return (self.methods or (self.name,))[0]

    @property
    def estimate(self) -> Callable[..., Any]:
        return _load(self.function)

    @property
    def needs_value(self) -> bool:
        """The older name of :attr:`needs_critic`."""
        return self.needs_critic


@dataclass(frozen=True)
class PolicyLoss:
    """A per-token policy loss: ``(logprobs, old_logprobs, advantages, mask, clip_low, clip_high)
    -> (loss [B, L], clipped flags [B, L])``. Where a row's advantages are 0 its loss, gradient and
    clipped flags must be 0 (the updater skips such rows: ``trainer.skip_zero_advantage``)."""

    name: str
    function: str
    description: str
    aliases: tuple[str, ...] = ()
    #: The loss aggregation of its paper, when ``trainer.loss_agg`` is null; it wins over the estimator's.
    loss_agg: Optional[str] = None

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    @property
    def loss(self) -> Callable[..., Any]:
        return _load(self.function)


E = TypeVar("E", Estimator, PolicyLoss)


class Registry(Generic[E]):
    """Entries by name and alias, in the order they were added; a name is taken once."""

    def __init__(self, kind: str, key: str) -> None:
        self.kind, self.key = kind, key  # e.g. "estimator", "trainer.algorithm"
        self._entries: list[E] = []
        self._by_name: dict[str, E] = {}

    def add(self, entry: E) -> E:
        for name in entry.names:
            if name in self._by_name:
                raise ValueError(f"{self.kind} name {name!r} is registered twice")
            self._by_name[name] = entry
        self._entries.append(entry)
        return entry

    def __iter__(self) -> Iterator[E]:
        return iter(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def names(self) -> tuple[str, ...]:
        """Every accepted name, each entry's name before its aliases."""
        return tuple(self._by_name)

    def get(self, name: str) -> E:
        """The entry named *name*; an unknown name fails naming the registered ones and the closest."""
        if name not in self._by_name:
            raise ValueError(f"{self.key} must be one of {', '.join(self._by_name)}, got {name!r}."
                             f"{did_you_mean(name, self._by_name)}")
        return self._by_name[name]


ESTIMATORS: Registry[Estimator] = Registry("estimator", "trainer.algorithm")
ESTIMATORS.add(Estimator(
    "ppo", "agentgym_trainer_rl.algorithms:gae", "value head + GAE (Schulman et al. 2016), whitened over the batch",
    aliases=("gae",), needs_critic=True, methods=("PPO",)))
ESTIMATORS.add(Estimator(
    "grpo", "agentgym_trainer_rl.algorithms:grpo", "R − group mean, divided by the group's std (Shao et al. 2024)",
    grouped=True, methods=("GRPO",)))
ESTIMATORS.add(Estimator(
    "dr_grpo", "agentgym_trainer_rl.algorithms:dr_grpo", "R − group mean, no std, summed over tokens (Liu et al. 2025)",
    grouped=True, loss_agg="seq-mean-token-sum", methods=("Dr-GRPO",)))
ESTIMATORS.add(Estimator(
    "rloo", "agentgym_trainer_rl.algorithms:rloo", "R − mean of the group's other episodes (Ahmadian et al. 2024)",
    grouped=True, methods=("RLOO",)))
ESTIMATORS.add(Estimator(
    "reinforce_pp", "agentgym_trainer_rl.algorithms:reinforce_pp",
    "discounted token returns, whitened over the batch (Hu 2025)",
    methods=("REINFORCE++", "REINFORCE++2")))  # REINFORCE++2: a spelling the seed API took, kept
ESTIMATORS.add(Estimator(
    "reinforce_pp_baseline", "agentgym_trainer_rl.algorithms:reinforce_pp_baseline",
    "R − group mean, whitened over the batch (Hu 2025)", grouped=True, methods=("REINFORCE++-baseline",)))

POLICY_LOSSES: Registry[PolicyLoss] = Registry("policy loss", "trainer.policy_loss")
POLICY_LOSSES.add(PolicyLoss(
    "ppo", "agentgym_trainer_rl.losses:ppo_policy_loss", "clipped surrogate on each token's ratio (Schulman et al. 2017)"))
POLICY_LOSSES.add(PolicyLoss(
    "gspo", "agentgym_trainer_rl.losses:gspo_policy_loss",
    "clipped surrogate on the episode's sequence ratio (Zheng et al. 2025)", loss_agg="seq-mean-token-mean"))


def grouped_names() -> tuple[str, ...]:
    """The group estimators' names (credit ``turn`` and dynamic sampling apply to them)."""
    return tuple(name for e in ESTIMATORS if e.grouped for name in e.names)


def default_loss_agg(policy_loss: str = "ppo", algorithm: str = "") -> str:
    """The aggregation when ``trainer.loss_agg`` is null: the policy loss's, else the estimator's, else token-mean."""
    for registry, name in ((POLICY_LOSSES, policy_loss), (ESTIMATORS, algorithm)):
        if name in registry and registry.get(name).loss_agg:
            return registry.get(name).loss_agg
    return "token-mean"


def methods() -> dict[str, str]:
    """``LLMAgent.train(method=...)`` spellings -> the estimator's name: each entry's :attr:`Estimator.methods`
    first, then its names (the umbrella compares them loosely and shows each estimator's first)."""
    return {s: e.name for e in ESTIMATORS for s in (*e.methods, *e.names)}


def _also(aliases: tuple[str, ...]) -> str:
    return ", ".join(f"`{a}`" for a in aliases) or "—"


def docs_table() -> str:
    """The markdown tables under docs/training.md's "Algorithms", between its registry markers (a test compares)."""
    flag = {True: "yes", False: "no"}
    lines = ["| `algorithm` | also | grouped | critic | default `loss_agg` | `method=` | what |",
             "|---|---|---|---|---|---|---|"]
    for e in ESTIMATORS:
        lines.append(f"| `{e.name}` | {_also(e.aliases)} | {flag[e.grouped]} | "
                     f"{flag[e.needs_critic]} | `{e.loss_agg or 'token-mean'}` | {e.method} | "
                     f"{e.description} |")
    lines += ["", "| `policy_loss` | also | default `loss_agg` | what |", "|---|---|---|---|"]
    for p in POLICY_LOSSES:
        agg = f"`{p.loss_agg}`" if p.loss_agg else "the estimator's"
        lines.append(f"| `{p.name}` | {_also(p.aliases)} | {agg} | {p.description} |")
    return "\n".join(lines)


if __name__ == "__main__":  # python -m agentgym_trainer_rl.registry: the docs table
    print(docs_table())
