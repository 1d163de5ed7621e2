"""Experts: scripted policies that env plugins register, played on an env instance in this process.

An expert is the upper bound an evaluation table shows next to a model (``agentgym eval
--expert NAME``) and the source of demonstrations for a warm start (``agentgym demos``). A
plugin registers it through the ``register_experts`` hook under ``<env>.<name>``::

    @hookimpl
    def register_experts(registry):
        registry.add("babyai.oracle", "agentgym_env_babyai.solvers:oracle", description="minigrid's BabyAIBot")

The target is a generator function ``expert(env, observation)``: *env* is the env instance,
just reset to the task (an expert may read its state, as a planner or a bot does), and
*observation* its first observation. It yields one action at a time, written exactly as the
agent writes an action for the env (what ``parse_action`` gets out of a reply), and receives
each step's observation back (``observation = yield action``). Returning ends the episode
(the expert gave up or thinks the task done). The target may instead be a class: one instance
per episode, built without arguments, is called with each observation and returns the next
action (None: it gives up), the shape of agents written for ``play_over_http``.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import AgentGymError, UnknownNameError, did_you_mean

#: What a registered expert is: ``expert(env, first_observation)`` yielding actions, sent observations.
Expert = Callable[[Any, str], Iterator[str]]


class ExpertError(AgentGymError):
    """An expert is unknown, belongs to another env, or failed while playing."""


@dataclass
class ExpertStep:
    action: str
    observation: str
    reward: float
    done: bool
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class ExpertEpisode:
    """One episode an expert played: the task, its first observation and every step."""

    task_id: int
    first_observation: str
    steps: list[ExpertStep] = field(default_factory=list)
    success: bool = False
    #: Sum of the env's rewards.
    score: float = 0.0
    #: ``done`` (the env ended it), ``max_turns``, ``gave_up`` (the expert stopped first) or ``env_error``.
    end_reason: str = "done"
    error: str | None = None


# -- finding an expert ------------------------------------------------------------------------
def expert_names(manager: Any, env: str | None = None) -> list[str]:
    """Registered expert names (``babyai.oracle``, ...), those of *env* only when given."""
    names = [e.name for e in manager.registry("experts").in_order()]
    return [n for n in names if env is None or n.partition(".")[0] == env]


def resolve_expert(manager: Any, env: str, name: str | None) -> Any:
    """The registry entry of expert *name* for env *env*: ``oracle`` means ``<env>.oracle``; None means
    the env's only (or first) expert. Errors name the env's experts and what else is registered."""
    registry = manager.registry("experts")
    own = expert_names(manager, env)
    if name is None:
        if not own:
            others = ", ".join(expert_names(manager)) or "none"
            raise ExpertError(f"env {env!r} registers no expert (its plugin has no register_experts hook); experts "
                              f"installed: {others}. Record demonstrations another way, or write one (docs/plugin_hooks.md, "
                              "register_experts)")
        return registry.get(own[0])
    full = name if "." in name else f"{env}.{name}"
    if full in registry:
        if full.partition(".")[0] != env:
            raise ExpertError(f"expert {full!r} plays env {full.partition('.')[0]!r}, not {env!r}; experts of "
                              f"{env!r}: {', '.join(own) or 'none'}")
        return registry.get(full)
    known = ", ".join(own) or "none"
    short = [n.partition(".")[2] for n in own]
    hint = did_you_mean(name.partition(".")[2] if "." in name else name, short) if short else ""
    raise UnknownNameError(f"unknown expert {name!r} for env {env!r}.{hint} Experts of {env!r}: {known} "
                           f"(all installed: {', '.join(expert_names(manager)) or 'none'}; `agentgym list experts`)")


# -- playing ----------------------------------------------------------------------------------
def play_expert(expert: Expert, env: Any, task_id: int, *, max_turns: int) -> ExpertEpisode:
    """Reset *env* to *task_id* and let *expert* play at most *max_turns* actions."""
    first = env.reset(task_id=task_id)
    episode = ExpertEpisode(task_id=int(task_id), first_observation=first, end_reason="max_turns")
    actions = expert(env, first)
    try:
        action = next(actions)
        while True:
            if not isinstance(action, str):
                raise ExpertError(f"expert {getattr(expert, '__name__', expert)!r} yielded {action!r}; an expert yields "
                                  "action strings")
            observation, reward, done, info = env.step(action)
            episode.steps.append(ExpertStep(action, observation, float(reward), bool(done), dict(info or {})))
            episode.score += float(reward)
            if done:
                episode.end_reason = "done"
                episode.success = bool((info or {}).get("success", reward > 0))
                break
            if len(episode.steps) >= max_turns:
                break
            action = actions.send(observation)
    except StopIteration:
        episode.end_reason = "gave_up"
    except AttributeError as exc:
        if "'send'" not in str(exc):
            raise
        raise ExpertError(f"expert {getattr(expert, '__name__', expert)!r} delegates with `yield from` to a list or "
                          "iterator, which cannot receive the observations sent back to it; write `for action in "
                          "actions: yield action` instead") from None
    finally:
        actions.close()
    return episode


def play_tasks(expert: Expert, env: Any, task_ids: Sequence[int], *, max_turns: int,
               progress: Callable[[int, int, int], None] | None = None,
               enough: Callable[[list[ExpertEpisode]], bool] | None = None) -> list[ExpertEpisode]:
    """Play each of *task_ids* in order; an env error fails that episode only. Stops early once
    *enough* (given the episodes so far) says so; *progress* gets ``(done, total, succeeded)``."""
    episodes: list[ExpertEpisode] = []
    for i, tid in enumerate(task_ids):
        try:
            episodes.append(play_expert(expert, env, tid, max_turns=max_turns))
        except AgentGymError:  # the expert or its settings are wrong (not the task): say it once
            raise
        except Exception as exc:  # noqa: BLE001 - one broken task fails one episode, as in a rollout
            episodes.append(ExpertEpisode(task_id=int(tid), first_observation="", end_reason="env_error",
                                          error=f"{type(exc).__name__}: {exc}"))
        if progress is not None:
            progress(i + 1, len(task_ids), sum(e.success for e in episodes))
        if enough is not None and enough(episodes):
            break
    return episodes


def as_trajectory(episode: ExpertEpisode, *, env: str, expert: str) -> Any:
    """The episode as a :class:`~agentgym_core.rollout.Trajectory` (no tokens), for the evaluation
    summary, the viewer, the report and the rewards that judge it. With no prompt tokens, its text is kept
    as ``transcript`` (the env's first observation, then each action and observation, in the chat format),
    so a judge reads the task the expert was given."""
    from .rollout.trajectory import Trajectory, Turn

    turns = [Turn(start=0, end=0, text=s.action, action=s.action, observation=s.observation, env_reward=s.reward,
                  done=s.done, info=s.info) for s in episode.steps]
    transcript = [{"role": "user", "content": episode.first_observation}] if episode.first_observation else None
    for s in episode.steps if transcript else ():
        transcript += [{"role": "assistant", "content": s.action}, {"role": "user", "content": s.observation}]
    failed = episode.end_reason == "env_error"
    return Trajectory(episode_id=f"expert-{expert}-t{episode.task_id}", env_name=env, task_id=episode.task_id,
                      group_id=0, token_ids=[], loss_mask=[], logprobs=[], prompt_len=0, turns=turns,
                      end_reason=episode.end_reason, success=episode.success, score=episode.score,
                      max_turns=0, failed=failed, error=episode.error, transcript=transcript)


def evaluate_expert(expert: Expert, env: Any, spec: Any, plan: Any, *, name: str,
                    dump_path: Any = None, label: str | None = "eval",
                    rewards: Any = ()) -> tuple[dict[str, Any], list[ExpertEpisode]]:
    """:func:`~agentgym_core.evaluation.evaluate` for an expert: the same task ids (``plan.tasks`` spread
    over ``plan.split``), horizon and summary format, so ``agentgym eval --compare`` sets it beside models.
    *rewards* (``(component, weight)`` pairs): those that judge (``score_batch``) add ``summary["judged"]``."""
    from .evaluation import ProgressLine, eval_tasks, judged_scores, select_tasks, summarize
    from .rollout.trajectory import dump_trajectories

    ids = select_tasks(spec.ids(plan.split), plan.tasks)
    say = ProgressLine(label) if label else None
    started = time.perf_counter()
    tasks = [tid for tid, _ in eval_tasks(ids, plan.k)]
    episodes = play_tasks(expert, env, tasks, max_turns=plan.max_turns,
                          progress=(lambda done, total, _ok: say.update(done, total)) if say else None)
    if say is not None:
        say.close(sum(e.success for e in episodes))
    trajs = [as_trajectory(e, env=spec.name, expert=name) for e in episodes]
    for group, t in enumerate(trajs):
        t.group_id, t.max_turns = group // plan.k, plan.max_turns
    judged = judged_scores(list(rewards), trajs)  # before the dump: the verdicts go into the episodes' files
    if dump_path is not None:
        dump_trajectories(trajs, dump_path, 0)
    summary = summarize(trajs, k=plan.k, categories=spec.categories_of(ids))
    summary["meta"] = {"tasks": len(ids), "max_turns": plan.max_turns, "temperature": 0.0,
                       **plan.meta(model=f"expert:{name}", env=spec), "strategy": "expert", "expert": name,
                       "wall_s": round(time.perf_counter() - started, 3)}
    if judged:
        summary["judged"] = judged
    return summary, episodes


def build_env(cfg: Any, manager: Any) -> tuple[Any, Any]:
    """An instance of the config's env in this process (with its ``env`` options) and its
    :class:`~agentgym_core.env.spec.EnvSpec`."""
    from .config import build_component
    from .env.spec import EnvSpec

    if "env" not in cfg:
        raise ExpertError("the run config has no 'env' section: say which env the expert plays (env: {name: ...})")
    urls = list(cfg.env.get("urls") or [])
    if urls:  # an expert reads the env's own state: it plays an instance in this process, never a server
        raise ExpertError(f"experts play {cfg.env.name} in this process, not through env servers, so env.urls "
                          f"({', '.join(map(str, urls))}) would be ignored; drop it (env.urls=[]) to let the expert "
                          "play here")
    entry = manager.registry("envs").get(cfg.env.name)
    env = build_component(manager, "envs", cfg.env)
    spec = EnvSpec.from_env(env, name=cfg.env.name, distribution=entry.distribution,
                            version=manager.plugins[entry.plugin].version if entry.plugin in manager.plugins else None)
    return env, spec


def load_expert(manager: Any, env: str, name: str | None) -> tuple[str, Expert]:
    """``(full name, the expert as a generator function)`` for :func:`resolve_expert`'s arguments."""
    entry = resolve_expert(manager, env, name)
    target = entry.load()
    return entry.name, per_episode(target) if isinstance(target, type) else target


def per_episode(agent_class: type) -> Expert:
    """An expert from a class whose instances (one per episode) map each observation to an action."""

    def expert(env: Any, observation: str) -> Iterator[str]:
        agent = agent_class()
        while (action := agent(observation)) is not None:
            observation = yield action

    expert.__name__ = agent_class.__name__
    return expert
