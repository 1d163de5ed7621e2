"""Context policies: what the model sees per reply, what each turn records, and the two bounds.

The model's prompt is a list of spans of the episode's tokens; each turn records them
(``Turn.context``) so the update can score the reply under exactly that prompt. These tests
drive real rollouts (a scripted engine records every prompt it was sent) and check the
recorded spans against what the engine actually received.
"""
from __future__ import annotations

import dataclasses

import pytest

from agentgym_core import BaseEnv, hookimpl
from agentgym_core.assembly import local_parts
from agentgym_core.errors import AgentGymError, ConfigError
from agentgym_core.rollout.context import ContextPolicy, EpisodeView, WindowContext, check_spans, merge_spans
from agentgym_core.rollout.runner import run_rollout
from agentgym_core.rollout.segments import training_segments
from agentgym_core.testing import ScriptedEngine


class CountEnv(BaseEnv):
    """Never ends on its own: every action gets the next observation (the horizon ends it)."""

    instruction = "Say a number."
    action_format = "free"

    def reset(self, *, task_id=None, seed=None):
        self.n = 0
        return f"Start of task {task_id}."

    def step(self, action):
        self.n += 1
        return f"Observation number {self.n}: keep going.", 0.0, False, {}


def _view(turns: int, *, pinned=None, prompt_len=10, turn_len=5) -> EpisodeView:
    starts = tuple(prompt_len + k * turn_len for k in range(turns))
    return EpisodeView(list(range(prompt_len + turns * turn_len)), prompt_len, starts, pinned=pinned)


def test_window_spans_exact_and_chunked():
    exact, chunked = WindowContext(turns=2), WindowContext(turns=2, chunked=True)
    assert exact.spans(_view(2)) == [(0, 20)]  # two turns fit the window: the whole episode
    assert exact.spans(_view(3)) == [(0, 10), (15, 25)]  # initial prompt + the last two turns
    assert exact.spans(_view(5)) == [(0, 10), (25, 35)]
    # chunked: between 2 and 3 turns in view; the window moves two turns at a time
    kept = [chunked.spans(_view(n)) for n in range(2, 8)]
    assert kept == [[(0, 20)], [(0, 25)], [(0, 10), (20, 30)], [(0, 10), (20, 35)], [(0, 10), (30, 40)],
                    [(0, 10), (30, 45)]]
    # a pinned turn out of the window comes along; inside it, it does not take a place
    assert exact.spans(_view(5, pinned=0)) == [(0, 15), (25, 35)]
    assert exact.spans(_view(5, pinned=4)) == [(0, 10), (20, 35)]


def test_spans_are_checked_with_the_policy_named():
    assert merge_spans([(0, 5), (5, 9), (12, 12), (12, 14)]) == [(0, 9), (12, 14)]
    with pytest.raises(AgentGymError, match="'mine'.*end at token 9, not at the episode's end \\(14\\)"):
        check_spans([(0, 9)], 14, "mine")
    with pytest.raises(AgentGymError, match="increasing, non-overlapping"):
        check_spans([(5, 9), (0, 14)], 14, "mine")
    with pytest.raises(AgentGymError, match="gave no tokens"):
        check_spans([(3, 3)], 14, "mine")


@pytest.mark.parametrize("policy,segments", [
    (ContextPolicy(), [(0, 1, 2, 3, 4, 5, 6, 7)]),
    (WindowContext(turns=2), [(0, 1, 2), (3,), (4,), (5,), (6,), (7,)]),
    (WindowContext(turns=2, chunked=True), [(0, 1, 2, 3), (4, 5), (6, 7)]),
])
def test_recorded_contexts_are_what_the_engine_was_sent(smol_tokenizer, policy, segments):
    engine = ScriptedEngine(smol_tokenizer, replies=lambda prompt, n: f"{n}")
    traj = run_rollout(local_parts(engine, CountEnv, context=policy), [(3, 0)], max_turns=8)[0]
    assert traj.num_turns == 8 and traj.end_reason == "max_turns"
    for turn, sent in zip(traj.turns, engine.prompts):
        spans = [(0, turn.start)] if turn.context is None else [tuple(s) for s in turn.context]
        assert [t for a, b in spans for t in traj.token_ids[a:b]] == sent
        assert turn.prompt_tokens == len(sent)
    assert [s.turns for s in training_segments(traj)] == segments
    # every segment ends with its own replies, exactly as sampled
    for seg in training_segments(traj):
        last = traj.turns[seg.turns[-1]]
        assert seg.spans[-1][1] == last.end


def test_the_context_bound_is_what_the_model_sees(smol_tokenizer):
    """model.max_context bounds the prompt shown plus the reply, not the stored episode."""
    engine = ScriptedEngine(smol_tokenizer, replies=lambda prompt, n: f"{n}")
    parts = local_parts(engine, CountEnv, context=WindowContext(turns=2), max_context=200, max_episode_tokens=10_000)
    traj = run_rollout(parts, [(0, 0)], max_turns=30)[0]
    assert traj.end_reason == "max_turns" and traj.num_turns == 30
    assert len(traj.token_ids) > 3 * 200  # the episode outgrew the context many times over
    assert max(len(p) for p in engine.prompts) < 200

    full = run_rollout(local_parts(ScriptedEngine(smol_tokenizer, replies=lambda p, n: f"{n}"), CountEnv,
                                   max_context=200, max_episode_tokens=10_000), [(0, 0)], max_turns=30)[0]
    assert full.end_reason == "context" and len(full.token_ids) < 200  # the full history hits it


def test_episode_and_generated_budgets_end_with_their_own_reason(smol_tokenizer):
    replies = lambda prompt, n: "1 2 3 4 5 6 7 8"  # noqa: E731
    window = WindowContext(turns=1)
    stored = run_rollout(local_parts(ScriptedEngine(smol_tokenizer, replies=replies), CountEnv, context=window,
                                     max_episode_tokens=300), [(0, 0)], max_turns=50)[0]
    assert stored.end_reason == "max_tokens" and len(stored.token_ids) <= 300
    generated = run_rollout(local_parts(ScriptedEngine(smol_tokenizer, replies=replies), CountEnv, context=window,
                                        max_generated_tokens=40), [(0, 0)], max_turns=50)[0]
    assert generated.end_reason == "max_generated" and generated.num_generated <= 40
    assert generated.num_turns >= 2


def test_a_prompt_that_can_never_fit_is_refused_before_any_episode(smol_tokenizer):
    class Wordy(CountEnv):
        instruction = "Say a number. " * 120

    with pytest.raises(AgentGymError, match=r"prompt before any observation is \d+ tokens.*model.max_context is 256"):
        run_rollout(local_parts(ScriptedEngine(smol_tokenizer), Wordy, max_context=256), [(0, 0)], max_turns=2)


class FirstAndLast(ContextPolicy):
    """A third party's policy: the initial prompt, the first turn and the latest one."""

    @dataclasses.dataclass
    class Config:
        keep_first: bool = True

    name = "first_and_last"

    def spans(self, view):
        if view.num_turns <= 2:
            return [(0, view.length)]
        out = [(0, view.prompt_len)]
        if self.config.keep_first:
            out.append((view.turn_starts[0], view.turn_end(0)))
        return out + [(view.turn_starts[-1], view.length)]


class ContextPlugin:
    @staticmethod
    @hookimpl
    def register_context_policies(registry):
        registry.add("first_and_last", f"{__name__}:FirstAndLast", description="test policy")


def test_hook_register_context_policies(tmp_path, plugin_manager, register_plugin, smol_tokenizer):
    from agentgym_core.config import load_config
    from agentgym_core.assembly import context_policy

    register_plugin(ContextPlugin, "context-plugin")
    cfg = load_config(None, ["agent.context.name=first_and_last", "agent.context.keep_first=false"], plugin_manager)
    policy = context_policy(cfg, plugin_manager)
    assert isinstance(policy, FirstAndLast) and policy.config.keep_first is False
    with pytest.raises(ConfigError, match="unknown.*keep_last|keep_last"):
        load_config(None, ["agent.context.name=first_and_last", "agent.context.keep_last=true"], plugin_manager)
    both = load_config(None, ["agent.context.name=window", "agent.history_window=2"], plugin_manager)
    with pytest.raises(ConfigError, match="both say what the model sees"):
        context_policy(both, plugin_manager)
    shorthand = context_policy(load_config(None, ["agent.history_window=3"], plugin_manager), plugin_manager)
    assert isinstance(shorthand, WindowContext) and shorthand.config.turns == 3

    engine = ScriptedEngine(smol_tokenizer, replies=lambda prompt, n: f"{n}")
    traj = run_rollout(local_parts(engine, CountEnv, context=FirstAndLast()), [(0, 0)], max_turns=5)[0]
    seen = smol_tokenizer.decode(engine.prompts[-1])
    assert "Observation number 1:" in seen and "Observation number 2:" not in seen and "number 4:" in seen
    assert [s.turns for s in training_segments(traj)] == [(0, 1, 2), (3,), (4,)]


def test_the_context_policy_is_resolved_once_in_the_parts(smol_tokenizer, plugin_manager, register_plugin):
    """``agent.history_window`` / ``agent.context`` become ``RunParts.context`` when the parts are made; the
    episode loop plays exactly that policy and the agent settings hold no second copy of the window."""
    import asyncio

    from agentgym_core.assembly import AgentSettings, RunParts, assemble
    from agentgym_core.config import load_config
    from agentgym_core.rollout.batcher import GenerationBatcher
    from agentgym_core.rollout.loop import EpisodeLoop

    assert "history_window" not in {f.name for f in dataclasses.fields(AgentSettings)}
    assert type(RunParts(pool=None, env=None).context) is ContextPolicy  # nothing said: the whole episode
    windowed = local_parts(None, CountEnv, history_window=2)
    assert isinstance(windowed.context, WindowContext) and windowed.context.config.turns == 2
    with pytest.raises(ConfigError, match="not both"):
        local_parts(None, CountEnv, history_window=2, context=FirstAndLast())

    class Plugin:
        @staticmethod
        @hookimpl
        def register_envs(registry):
            registry.add("count", f"{__name__}:CountEnv")

    register_plugin(Plugin, "count-env")
    cfg = load_config(None, ["env.name=count", "agent.history_window=3"], plugin_manager)
    parts = asyncio.run(assemble(cfg, plugin_manager, local=True))
    try:
        parts.engine = ScriptedEngine(smol_tokenizer)
        loop = EpisodeLoop(parts, GenerationBatcher(parts.engine), max_turns=2, step=0, temperature=0.0, seed=0)
        assert loop.context_policy is parts.context and parts.context.config.turns == 3
    finally:
        asyncio.run(parts.aclose())
