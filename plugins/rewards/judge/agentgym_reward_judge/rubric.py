"""Rubrics: what the judge scores, on which scale, and how a score becomes a reward in [0, 1].

A rubric is a YAML file, a dict of the same keys, a :class:`Rubric`, or the name of one shipped
with this package (``satisfaction``, ``plan_completeness``; see ``rubrics/``)::

    name: satisfaction
    description: How satisfied would the user be with how the agent handled the conversation?
    scale: [1, 5]
    criteria: [The user's requests were all handled, ...]
    levels: {1: nothing the user wanted was done, 5: everything was done, correctly and politely}
    rewards: {1: 0.0, 2: 0.1, 3: 0.4, 4: 0.8, 5: 1.0}   # optional; default: linear onto [0, 1]
    reference: null          # an info key of the last turn to show as reference answer (default: none)
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

from agentgym_core import ConfigError

#: Bumped whenever the prompt the judge sees changes: cached verdicts of an older prompt are not reused.
PROMPT_VERSION = 1
SHIPPED = Path(__file__).resolve().parent / "rubrics"
#: What every rubric adds to its criteria: the judge must not be bought by length or by the agent's words.
LENGTH_RULE = ("Length is not a merit: a longer answer scores no higher than a shorter one that does as much, "
               "and repetition, filler or padding counts against an answer, never for it.")


@dataclass(frozen=True)
class Rubric:
    """One rubric; see the module docstring for the keys."""

    name: str
    description: str
    criteria: tuple[str, ...] = ()
    #: The lowest and highest score (integers).
    scale: tuple[int, int] = (1, 5)
    #: Score -> what it means (anchors shown to the judge).
    levels: dict[int, str] = field(default_factory=dict)
    #: Score -> reward; empty: linear, ``(score - low) / (high - low)``.
    rewards: dict[int, float] = field(default_factory=dict)
    #: An info key of the episode's last turn holding a reference answer shown to the judge (None: none shown).
    reference: Optional[str] = None
    #: ``trajectory`` (every turn) or ``final_answer`` (the last reply only): the default of the reward's ``show``.
    show: str = "trajectory"

    def __post_init__(self) -> None:
        low, high = self.scale
        where = f"rubric {self.name!r}"
        if not self.name or not self.description:
            raise ConfigError(f"{where}: a rubric needs a non-empty 'name' and 'description'")
        if not (isinstance(low, int) and isinstance(high, int)) or high <= low:
            raise ConfigError(f"{where}: scale must be two integers [low, high] with high > low, got {list(self.scale)}")
        for score, reward in self.rewards.items():
            if not low <= score <= high or not 0.0 <= reward <= 1.0:
                raise ConfigError(f"{where}: rewards maps scores in [{low}, {high}] to rewards in [0, 1], "
                                  f"got {score}: {reward}")
        if self.rewards and set(self.rewards) != set(range(low, high + 1)):
            raise ConfigError(f"{where}: rewards must give every score {low}..{high}, got {sorted(self.rewards)}")
        if self.show not in ("trajectory", "final_answer"):
            raise ConfigError(f"{where}: show must be 'trajectory' or 'final_answer', got {self.show!r}")

    def reward(self, score: int) -> float:
        """The reward in [0, 1] of a score on this rubric's scale."""
        if self.rewards:
            return float(self.rewards[score])
        low, high = self.scale
        return (score - low) / (high - low)

    def text(self) -> str:
        """The rubric as the judge reads it."""
        low, high = self.scale
        lines = [f"Rubric: {self.name}", self.description.strip(), "", "Criteria:"]
        lines += [f"- {c.strip()}" for c in (*self.criteria, LENGTH_RULE)]
        lines.append(f"Scale: an integer from {low} (worst) to {high} (best).")
        lines += [f"  {score}: {meaning.strip()}" for score, meaning in sorted(self.levels.items())]
        return "\n".join(lines)

    def digest(self) -> str:
        """A hash of everything the judge is told about this rubric (and of the prompt's version)."""
        data = dataclasses.asdict(self)
        data["prompt_version"] = PROMPT_VERSION
        blob = json.dumps(data, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


def shipped_rubrics() -> list[str]:
    """Names of the rubrics that come with this package."""
    return sorted(p.stem for p in SHIPPED.glob("*.yaml"))


def rubric_from_dict(data: dict[str, Any], where: str = "rubric") -> Rubric:
    """A :class:`Rubric` from plain data (a YAML file's content); unknown keys fail naming them."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: a rubric is a mapping of name, description, criteria, scale, ..., "
                          f"got {type(data).__name__}")
    known = {f.name for f in dataclasses.fields(Rubric)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"{where}: unknown rubric key(s) {unknown}; valid keys: {', '.join(sorted(known))}")
    values = dict(data)
    if "criteria" in values:
        values["criteria"] = tuple(str(c) for c in values["criteria"] or ())
    if "scale" in values:
        scale = values["scale"]
        if not isinstance(scale, (list, tuple)) or len(scale) != 2:
            raise ConfigError(f"{where}: scale must be [low, high], got {scale!r}")
        values["scale"] = (scale[0], scale[1])
    for key, cast in (("levels", str), ("rewards", float)):
        if key in values:
            values[key] = {int(k): cast(v) for k, v in (values[key] or {}).items()}
    try:
        return Rubric(**values)
    except TypeError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def load_rubric(spec: Any) -> Rubric:
    """A :class:`Rubric`, a dict, a path to a YAML file, or the name of a shipped rubric -> :class:`Rubric`."""
    if isinstance(spec, Rubric):
        return spec
    if isinstance(spec, dict):
        return rubric_from_dict(spec)
    if not isinstance(spec, (str, Path)) or not str(spec):
        raise ConfigError(f"rubric: give a shipped rubric's name ({', '.join(shipped_rubrics())}), a YAML file or a "
                          f"mapping, got {spec!r}")
    path = Path(spec)
    if not path.suffix and (SHIPPED / f"{spec}.yaml").is_file():
        path = SHIPPED / f"{spec}.yaml"
    if not path.is_file():
        raise ConfigError(f"rubric {str(spec)!r} is neither a shipped rubric ({', '.join(shipped_rubrics())}) nor a "
                          f"YAML file")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"rubric file {str(path)!r} is not valid YAML: {exc}") from None
    return rubric_from_dict(data, f"rubric file {str(path)!r}")
