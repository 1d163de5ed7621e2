"""The ``external`` strategy in a rollout: agents on the real ``openai`` client, a tiny real model, real envs.

What the agent's calls become is checked against what did not go through the endpoint: the engine's own
results, the rollout loop's trajectory for the same conversation, and (in test_segments_train.py) the
trainer's scores of each reply under its own prompt.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("openai")
pytest.importorskip("agentgym_engine_hf")

from agentgym_external.strategy import ExternalStrategy  # noqa: E402

from agentgym_core import BaseEnv  # noqa: E402
from agentgym_core.assembly import local_parts  # noqa: E402
from agentgym_core.rollout.chat import ChatFormat  # noqa: E402
from agentgym_core.rollout.runner import run_rollout  # noqa: E402
from agentgym_core.rollout.segments import training_segments  # noqa: E402

AGENTS = Path(__file__).with_name("agents.py")
sys.path.insert(0, str(AGENTS.parent))
import agents  # noqa: E402


class CountEnv(BaseEnv):
    """Three replies end the episode; even task ids succeed, so groups have varied rewards."""

    instruction = "Say anything. The episode ends after three replies."
    action_format = "free"

    def reset(self, *, task_id=None, seed=None):
        self.n, self.task = 0, int(task_id or 0)
        return f"Task {self.task}: begin."

    def step(self, action):
        self.n += 1
        done = self.n >= 3
        ok = done and self.task % 2 == 0
        return f"Reply {self.n} had {len(action)} characters.", float(ok), done, {"success": ok}

    def splits(self):
        return {"train": list(range(64)), "test": list(range(64, 72))}


class Recording:
    """The real engine, keeping every result it returned (what the engine sampled, to compare with the trace)."""

    def __init__(self, engine) -> None:
        self.engine, self.results, self.prompts = engine, [], []

    def generate(self, requests):
        out = self.engine.generate(requests)
        self.prompts += [list(r.prompt_ids) for r in requests]
        self.results += out
        return out

    def __getattr__(self, name):
        return getattr(self.engine, name)


def _parts(engine, agent, **settings):
    return local_parts(engine, CountEnv, strategy=ExternalStrategy(agent=agent, timeout=60),
                       max_new_tokens=6, **settings)


def test_recorded_tokens_and_logprobs_are_what_the_engine_sampled(hf_engine):
    engine = Recording(hf_engine)
    traj = run_rollout(_parts(engine, agents.loop_agent), [(4, 0)], max_turns=5, seed=1)[0]
    assert not traj.failed and traj.end_reason == "done" and traj.success and traj.score == 1.0
    assert len(traj.turns) == len(engine.results) == 3
    for turn, result, prompt in zip(traj.turns, engine.results, engine.prompts):
        assert traj.token_ids[turn.start:turn.end] == result.token_ids
        assert traj.logprobs[turn.start:turn.end] == pytest.approx(result.logprobs, abs=0)
        assert traj.token_ids[:turn.start] == prompt  # every prompt extended the one before: one segment
        assert turn.context is None and turn.action is not None
    assert [s.turns for s in training_segments(traj)] == [(0, 1, 2)]
    assert traj.transcript[-1]["role"] == "assistant" and traj.transcript[0]["role"] == "system"


def test_the_trajectory_is_the_one_the_rollout_loop_builds(hf_engine):
    """Same task, same seeds: the loop's own episode and the openai-client agent's are token for token one."""
    ours = run_rollout(local_parts(hf_engine, CountEnv, max_new_tokens=6), [(2, 0)], max_turns=5, seed=3)[0]
    theirs = run_rollout(_parts(hf_engine, agents.loop_agent), [(2, 0)], max_turns=5, seed=3)[0]
    assert theirs.token_ids == ours.token_ids
    assert theirs.loss_mask == ours.loss_mask
    assert theirs.logprobs == pytest.approx(ours.logprobs, abs=1e-6)
    assert theirs.prompt_len == ours.prompt_len
    assert [(t.start, t.end, t.context) for t in theirs.turns] == [(t.start, t.end, t.context) for t in ours.turns]
    assert [(t.action, t.observation, t.env_reward, t.done) for t in theirs.turns] == \
        [(t.action, t.observation, t.env_reward, t.done) for t in ours.turns]
    assert (theirs.success, theirs.score, theirs.end_reason) == (ours.success, ours.score, ours.end_reason)


def test_a_history_rewrite_makes_two_segments(hf_engine):
    traj = run_rollout(_parts(hf_engine, agents.summarizing_agent), [(0, 0)], max_turns=5, seed=0)[0]
    assert not traj.failed and traj.end_reason == "returned" and traj.success  # its return value: 1.0
    segments = training_segments(traj)
    assert [s.turns for s in segments] == [(0,), (1, 2)]
    assert traj.turns[1].context is not None and traj.turns[2].context is not None
    # the summary call shares the system prompt with the first call: stored once
    system_end = traj.turns[1].context[0][1]
    assert traj.turns[1].context[0][0] == 0 and 0 < system_end <= traj.turns[0].start


def test_64_concurrent_episodes_batch_without_cross_talk(hf_engine):
    engine = Recording(hf_engine)
    stats: dict = {}
    tasks = [(i, i // 2) for i in range(64)]
    trajs = run_rollout(_parts(engine, agents.echo_agent, concurrency=64), tasks, max_turns=5, seed=0, stats=stats)
    assert len(trajs) == 64 and not any(t.failed for t in trajs)
    chat = ChatFormat(hf_engine.tokenizer)
    assert stats["mean_batch"] > 8, stats  # 64 agents' calls met in the batcher
    print(f"64 external episodes, 3 calls each: {stats['batches']} batches, mean batch {stats['mean_batch']:.1f}")
    for traj in trajs:
        assert len(traj.turns) == 3 and traj.success == (traj.task_id % 2 == 1)
        mine = f"episode {traj.episode_id}"
        users = [m["content"] for m in traj.transcript if m["role"] == "user"]
        assert users[0] == f"I am {mine}." and all(traj.episode_id in u for u in users)
        # what the agent received is what its own trajectory sampled
        replies = [m["content"] for m in traj.transcript if m["role"] == "assistant"]
        assert replies == [chat.split_reply(traj.token_ids[t.start:t.end])[0] for t in traj.turns]
        assert f"I am {mine}." in chat.decode(traj.token_ids[:traj.prompt_len])
    assert len(engine.results) == 64 * 3


@pytest.mark.parametrize("agent", ["hanging", "crashing"])
def test_hung_and_crashing_agents_fail_their_episode_only(hf_engine, agent):
    fn = {"hanging": agents.hanging_agent, "crashing": agents.crashing_agent}[agent]
    parts = local_parts(hf_engine, CountEnv, max_new_tokens=4,
                        strategy=ExternalStrategy(agent=_mixed(fn), timeout=20))
    trajs = run_rollout(parts, [(0, 0), (1, 0), (2, 1), (3, 1)], max_turns=5, seed=0)
    bad, good = trajs[:2], trajs[2:]
    assert all(t.failed for t in bad) and not any(t.failed for t in good), [(t.end_reason, t.error) for t in trajs]
    reason = {"hanging": "agent_timeout", "crashing": "agent_error"}[agent]
    assert {t.end_reason for t in bad} == {reason}
    if agent == "crashing":
        assert "ValueError: the agent's own bug (agents.py" in bad[0].error
    else:
        assert "timeout (20 s)" in bad[0].error and parts.strategy.abandoned == 2


def _mixed(bad):
    """Task ids 0 and 1 run the bad agent, the others the loop agent."""
    def agent(task):
        return bad(task) if task.task_id < 2 else agents.loop_agent(task)
    return agent


@pytest.mark.parametrize("mode", ["loop", "hang", "crash"])
def test_a_command_agent(hf_engine, mode):
    strategy = ExternalStrategy(command=[sys.executable, str(AGENTS), mode], timeout=60 if mode != "hang" else 5)
    traj = run_rollout(local_parts(hf_engine, CountEnv, strategy=strategy, max_new_tokens=4), [(1, 0)],
                       max_turns=5, seed=0)[0]
    if mode == "loop":  # it reported its own reward through AGENTGYM_RESULT
        assert not traj.failed and traj.success and traj.score == 0.5 and len(traj.turns) == 3
        assert [t.action is not None for t in traj.turns] == [True] * 3  # its env steps went through the endpoint
    elif mode == "hang":
        assert traj.failed and traj.end_reason == "agent_timeout" and "killed" in traj.error
    else:
        assert traj.failed and traj.end_reason == "agent_error" and "the agent's own bug" in traj.error


def test_the_update_scores_each_segment_under_its_own_prompt(hf_engine):
    """The trainer's log-prob of every sampled token equals the engine's (fp32 both): each reply was scored
    under the prompt the agent sent. Scored under the whole episode before it instead, they differ."""
    pytest.importorskip("agentgym_trainer_rl")
    import dataclasses

    import torch
    from agentgym_trainer_rl.algorithms import ALGORITHMS, EstimatorOptions
    from agentgym_trainer_rl.batch import build_batch
    from agentgym_trainer_rl.config import UpdateConfig
    from agentgym_trainer_rl.policy import PolicyModule
    from agentgym_trainer_rl.update import Updater, UpdateSettings

    trajs = run_rollout(_parts(hf_engine, agents.summarizing_agent), [(0, 0), (2, 0)], max_turns=5, seed=4)
    assert all(len(training_segments(t)) == 2 for t in trajs)
    policy = PolicyModule(hf_engine.model)
    cfg = UpdateConfig(ppo_epochs=2)
    opts = UpdateSettings(**{f.name: getattr(cfg, f.name) for f in dataclasses.fields(UpdateConfig)},
                          bf16=False, device="cpu", min_shared_prefix=4)
    scorer = Updater(policy, torch.optim.SGD(policy.parameters(), lr=0.0), ALGORITHMS["grpo"], opts,
                     EstimatorOptions())

    def worst(batch) -> float:
        scorer.score(batch)
        return max(abs(float(batch.old_logprobs[b, i]) - t.logprobs[i])
                   for b, t in enumerate(trajs) for i, m in enumerate(t.loss_mask) if m)

    assert worst(build_batch(trajs, pad_id=0)) < 1e-4
    for t in trajs:  # what scoring every reply under its episode's prefix would give
        for turn in t.turns:
            turn.context = None
    assert worst(build_batch(trajs, pad_id=0)) > 1e-3
