"""Calls -> one trajectory: prompts that extend are stored once and make one segment; a prompt that breaks
the prefix is a segment of its own, its context spans are exactly its prompt, and nothing is stored twice."""
from __future__ import annotations

from agentgym_external.trace import TraceBuilder

from agentgym_core.engine import GenerationResult
from agentgym_core.rollout.segments import training_segments, turn_context

SYSTEM = [1, 2, 3, 4]


def _result(ids: list[int]) -> GenerationResult:
    return GenerationResult(list(ids), [-0.5 - i for i in range(len(ids))], "stop", 0)


def _prompt_of(trace: TraceBuilder, k: int) -> list[int]:
    """Turn *k*'s prompt as the update will run it: the tokens of its context spans."""
    return [trace.token_ids[i] for a, b in turn_context(trace.turns[k]) for i in range(a, b)]


def test_prompts_that_extend_make_one_segment_stored_once():
    trace = TraceBuilder()
    p1 = SYSTEM + [10, 11]
    trace.add(p1, _result([20, 21, 2]), "a")
    p2 = p1 + [20, 21, 2] + [30, 31]  # the previous prompt, its reply, then a tool result
    trace.add(p2, _result([40, 2]), "b")
    p3 = p2 + [40, 2] + [50]
    trace.add(p3, _result([60]), "c")
    assert trace.token_ids == p3 + [60]
    assert trace.loss_mask == [0] * 6 + [1] * 3 + [0] * 2 + [1] * 2 + [0] + [1]
    assert trace.logprobs[6:9] == [-0.5, -1.5, -2.5] and trace.logprobs[:6] == [0.0] * 6
    assert [t.context for t in trace.turns] == [None, None, None]
    assert [(t.start, t.end) for t in trace.turns] == [(6, 9), (11, 13), (14, 15)]
    assert trace.prompt_len == 6 and trace.prefix_breaks == 0
    assert [s.turns for s in training_segments(_traj(trace))] == [(0, 1, 2)]


def test_a_rewritten_history_is_a_segment_of_its_own_sharing_the_unchanged_prefix():
    trace = TraceBuilder()
    p1 = SYSTEM + [10, 11]
    trace.add(p1, _result([20, 21]), "a")
    p2 = p1 + [20, 21] + [30]
    trace.add(p2, _result([40]), "b")
    rewritten = SYSTEM + [99, 98, 97]  # the agent summarised: same system prompt, new history
    trace.add(rewritten, _result([70, 71]), "c")
    p4 = rewritten + [70, 71] + [80]  # and goes on from the summary
    trace.add(p4, _result([90]), "d")
    assert trace.prefix_breaks == 1
    # only what no earlier call had is stored: the summary, never the shared system prompt again
    assert len(trace.token_ids) == len(p2) + 1 + 3 + 2 + 1 + 1
    for k, prompt in enumerate([p1, p2, rewritten, p4]):
        assert _prompt_of(trace, k) == prompt
    assert trace.turns[2].context == [[0, 4], [10, 13]]
    segments = training_segments(_traj(trace))
    assert [s.turns for s in segments] == [(0, 1), (2, 3)]
    assert [trace.token_ids[i] for i in segments[1].positions()] == p4 + [90]


def test_calls_in_parallel_and_a_repeated_prompt_each_keep_their_own_prompt():
    trace = TraceBuilder()
    p1 = SYSTEM + [10]
    trace.add(p1, _result([20]), "a")
    trace.add(p1, _result([21]), "b")  # the same prompt again (a retry, or two calls at once)
    p3 = p1 + [21] + [30]  # extends the second call
    trace.add(p3, _result([40]), "c")
    p4 = p1 + [20] + [31]  # goes back to the first call's branch
    trace.add(p4, _result([41]), "d")
    for k, prompt in enumerate([p1, p1, p3, p4]):
        assert _prompt_of(trace, k) == prompt
    assert trace.prefix_breaks == 2  # call 2 (same prompt, not extending call 1) and call 4
    assert [s.turns for s in training_segments(_traj(trace))] == [(0,), (1, 2), (3,)]
    assert len(trace.token_ids) == len(p1) + 1 + 1 + 1 + 1 + 1 + 1


def test_the_episode_is_closed_with_the_end_of_turn_marker_the_model_did_not_write():
    trace = TraceBuilder()
    trace.add(SYSTEM, _result([20, 21]), "a")
    trace.close([2], eot_sampled=False)
    assert trace.token_ids[-1] == 2 and trace.loss_mask[-1] == 0
    closed = TraceBuilder()
    closed.add(SYSTEM, _result([20, 2]), "a")
    closed.close([2], eot_sampled=True)
    assert closed.token_ids == SYSTEM + [20, 2]


def _traj(trace: TraceBuilder):
    from agentgym_core.rollout.trajectory import Trajectory

    traj = Trajectory(episode_id="e", env_name="x", task_id=0, group_id=0, token_ids=[], loss_mask=[], logprobs=[],
                      prompt_len=0)
    trace.fill(traj)
    return traj
