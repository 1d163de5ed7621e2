"""The trajectory: one episode as the exact token sequence the model saw and produced.

``token_ids`` holds the whole episode (prompt, then alternating model turns and observation
turns as the chat template renders them). ``loss_mask[i]`` is 1 exactly where token *i* was
sampled by the model; ``logprobs[i]`` is its sampling log-probability (0.0 where masked out).
Turn *k*'s generated tokens are ``token_ids[turns[k].start:turns[k].end]``; its reward is
attached to token ``turns[k].end - 1``, the last token the model generated in that turn.
``turns[k].context`` says what the model saw when it sampled them: None for the whole episode
before the reply (``token_ids[:start]``), else the spans of ``token_ids`` whose concatenation was
its prompt (a history window, a pinned plan, any context policy). Nothing is stored twice.
"""
from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional


@dataclass
class Turn:
    #: Generated-token span in ``Trajectory.token_ids``: [start, end).
    start: int
    end: int
    #: The model's text for this turn (decoded generated tokens).
    text: str
    #: The action parsed from the text (None when parsing failed).
    action: Optional[str]
    #: The observation that followed (env output, or the parse-error hint).
    observation: str = ""
    #: The env's reward for this step (0.0 when the action was not sent to the env).
    env_reward: float = 0.0
    done: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    #: Why the action could not be parsed, if it could not.
    parse_error: Optional[str] = None
    #: The engine's finish reason for this reply (``stop`` or ``length``).
    finish_reason: str = ""
    #: Tokens of context the model saw for this reply (smaller than ``start`` with a history window).
    prompt_tokens: int = 0
    #: Of those, the tokens the engine ran as prompt for this reply (the rest came from its KV cache).
    prefill_tokens: int = 0
    #: The ``[start, end)`` spans of ``Trajectory.token_ids`` the reply was sampled from, when that
    #: was not the whole episode before it (None): the update scores the reply under exactly these.
    context: Optional[list[list[int]]] = None
    #: ``action`` (parsed and sent to the env), or a strategy's own kind of reply (``plan``), which is
    #: kept in the episode and answered by the strategy instead of the env.
    kind: str = "action"
    #: The version of the policy's weights that sampled this reply (asynchronous training: the number of
    #: updates before them); None in a synchronous run, where it is the step's own.
    version: Optional[int] = None
    #: Greedy replies the repeat guard set aside before this one (``eval.repeat_guard``: each repeated an action
    #: the episode had already taken in answer to the same message); None where the guard did not act.
    resampled: Optional[int] = None


@dataclass
class Trajectory:
    episode_id: str
    env_name: str
    task_id: int
    #: Episodes of the same task in one step share a group (GRPO / RLOO baselines).
    group_id: int
    token_ids: list[int]
    loss_mask: list[int]
    logprobs: list[float]
    #: Length of the initial prompt (system + instruction + first observation).
    prompt_len: int
    turns: list[Turn] = field(default_factory=list)
    #: ``done`` (env ended it), ``max_turns``, ``max_tokens`` (``rollout.max_episode_tokens``: the stored
    #: episode is full), ``max_generated`` (``rollout.max_generated_tokens``), ``context`` (the model's
    #: next prompt and reply would not fit ``model.max_context``), ``env_error``, ``engine_error``.
    end_reason: str = "done"
    success: bool = False
    #: Sum of env rewards over the episode.
    score: float = 0.0
    #: The horizon (max turns) in force when the episode ran.
    max_turns: int = 0
    #: Per-turn rewards from the reward plugins (filled by the trainer; same length as turns).
    rewards: list[float] = field(default_factory=list)
    #: True when the episode failed for infrastructure reasons (env died): zero-weighted in training.
    failed: bool = False
    error: Optional[str] = None
    #: Tokens pushed through the model as prefill over the episode (cache-efficiency metric).
    prefill_tokens: int = 0
    #: Set when the chat template was not prefix-stable and the fallback re-rendered the prompt.
    template_fallback: bool = False
    step: int = 0
    #: Which attempt at the task this is (1-based); strategies such as ``reflect`` try again after a failure.
    attempt: int = 1
    #: The ``episode_id`` of the task's first attempt, shared by all its attempts ("" in old dumps: this one).
    first_episode_id: str = ""
    #: Text from earlier attempts put into this attempt's prompt (reflections): context, loss mask 0.
    memory: list[str] = field(default_factory=list)
    #: An agent written elsewhere (the ``external`` strategy): its last call's messages and the reply, in
    #: the OpenAI chat format, for reward plugins that judge the conversation (None: not recorded). An
    #: expert's episode (no tokens) keeps its conversation here too: first observation, actions, observations.
    transcript: Optional[list[dict[str, Any]]] = None

    @property
    def num_turns(self) -> int:
        return len(self.turns)

    @property
    def num_generated(self) -> int:
        return sum(self.loss_mask)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for turn in data["turns"]:  # written only where it says something (files stay as they were)
            for key in ("context", "version", "resampled"):
                if turn.get(key) is None:
                    turn.pop(key, None)
        if data.get("transcript") is None:
            data.pop("transcript", None)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Trajectory":
        data = dict(data)
        data["turns"] = [Turn(**t) for t in data.get("turns", [])]
        return cls(**data)


def dump_trajectories(trajectories: Sequence[Trajectory], path: str | os.PathLike, step: int) -> Path:
    """Write one JSON line per trajectory: *path* itself if it ends in ``.jsonl``, else ``path/step_XXXXXX.jsonl``."""
    target = Path(path)
    if target.suffix != ".jsonl":
        target = target / f"step_{step:06d}.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(t.to_dict(), ensure_ascii=False, default=str) + "\n" for t in trajectories)
    return target
