"""Each advantage estimator and each policy loss of the ``rl`` trainer, declared once, next to its function.

``@estimator(name, description, grouped=..., ...)`` on a function of :mod:`.algorithms` (or of any
package) declares it, as verl's ``register_adv_est`` does; ``@policy_loss(...)`` likewise for
:mod:`.losses`. A package outside the trainer makes its module known through the
``register_estimators`` / ``register_policy_losses`` hooks (``registry.add(name, "pkg.mod:function")``),
so it is found without being named here (docs/training.md, "Your own estimator"). Config validation
(with "did you mean"), the default loss aggregation, the functions the updater calls, the ``method=``
names of the seed-style API and the table in docs/training.md all read :data:`ESTIMATORS` and
:data:`POLICY_LOSSES`. The declaring modules import no torch at load (their functions import it), so
checking a config stays torch-free.
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
F = TypeVar("F", bound=Callable[..., Any])


class Entries(Generic[E]):
    """Entries by name and alias, in the order they were declared; a name is taken once. The declaring
    modules are imported on the first lookup: *modules* (this package's), then the functions plugins
    register as plugin kind *plugin_kind* (``register_estimators`` / ``register_policy_losses``)."""

    def __init__(self, kind: str, key: str, decorator: str, modules: tuple[str, ...], plugin_kind: str) -> None:
        self.kind, self.key, self.decorator = kind, key, decorator  # e.g. "estimator", "trainer.algorithm"
        self.modules, self.plugin_kind = modules, plugin_kind
        self._entries: list[E] = []
        self._by_name: dict[str, E] = {}
        self._loaded = False

    def add(self, entry: E) -> E:
        if self._by_name.get(entry.name) == entry:  # its module imported again
            return entry
        for name in entry.names:
            if name in self._by_name:
                raise ValueError(f"{self.kind} name {name!r} is registered twice")
            self._by_name[name] = entry
        self._entries.append(entry)
        return entry

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        for module in self.modules:
            import_module(module)
        from agentgym_core import get_plugin_manager

        for plugged in get_plugin_manager().registry(self.plugin_kind).in_order():
            plugged.load()  # its module declares it
            if plugged.name not in self._by_name:
                raise ValueError(
                    f"plugin {plugged.plugin!r} registered the {self.kind} {plugged.name!r} at {plugged.target!r}, "
                    f"which is not declared there: put @{self.decorator}({plugged.name!r}, ...) on that function")

    def __iter__(self) -> Iterator[E]:
        self._load()
        return iter(self._entries)

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._by_name

    def __getitem__(self, name: str) -> E:
        return self.get(name)

    def names(self) -> tuple[str, ...]:
        """Every accepted name, each entry's name before its aliases."""
        self._load()
        return tuple(self._by_name)

    def get(self, name: str) -> E:
        """The entry named *name*; an unknown name fails naming the registered ones and the closest."""
        self._load()
        if name not in self._by_name:
            raise ValueError(f"{self.key} must be one of {', '.join(self._by_name)}, got {name!r}."
                             f"{did_you_mean(name, self._by_name)}")
        return self._by_name[name]


#: Every advantage estimator ``trainer.algorithm`` may name.
ESTIMATORS: Entries[Estimator] = Entries("advantage estimator", "trainer.algorithm", "estimator",
                                         ("agentgym_trainer_rl.algorithms",), "estimators")
#: Every policy loss ``trainer.policy_loss`` may name.
POLICY_LOSSES: Entries[PolicyLoss] = Entries("policy loss", "trainer.policy_loss", "policy_loss",
                                             ("agentgym_trainer_rl.losses",), "policy_losses")


def _first_line(function: Callable[..., Any]) -> str:
    return (function.__doc__ or "").strip().splitlines()[0] if function.__doc__ else ""


def estimator(name: str, description: str = "", *, aliases: tuple[str, ...] = (), grouped: bool = False,
              needs_critic: bool = False, loss_agg: Optional[str] = None,
              methods: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Declare the decorated ``(batch, EstimatorOptions, all_reduce) -> (advantages, returns or None)``
    function as advantage estimator *name* (fields as :class:`Estimator`'s; *description*: its
    docstring's first line when not given)."""
    def declare(function: F) -> F:
        ESTIMATORS.add(Estimator(name, f"{function.__module__}:{function.__qualname__}",
                                 description or _first_line(function), aliases=aliases, grouped=grouped,
                                 needs_critic=needs_critic, loss_agg=loss_agg, methods=methods))
        return function

    return declare


def policy_loss(name: str, description: str = "", *, aliases: tuple[str, ...] = (),
                loss_agg: Optional[str] = None) -> Callable[[F], F]:
    """Declare the decorated per-token loss function (see :class:`PolicyLoss`) as policy loss *name*."""
    def declare(function: F) -> F:
        POLICY_LOSSES.add(PolicyLoss(name, f"{function.__module__}:{function.__qualname__}",
                                     description or _first_line(function), aliases=aliases, loss_agg=loss_agg))
        return function

    return declare


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
