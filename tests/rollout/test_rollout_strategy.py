"""The episode loop under a strategy: replies that are not actions, pinned turns, attempts and memory."""
from __future__ import annotations

from agentgym_core import BaseEnv
from agentgym_core.assembly import local_parts
from agentgym_core.rollout.runner import run_rollout
from agentgym_core.rollout.strategy import ACTION, Strategy
from agentgym_core.testing import ScriptedEngine

SENT: list[str] = []


class GuessEnv(BaseEnv):
    """Any action ends the episode; ``win`` succeeds. ``steps=N``: the first N-1 actions go on."""

    instruction = "Say win."
    action_format = "free"
    steps = 1

    def reset(self, *, task_id=None, seed=None):
        self.n = 0
        return f"Task {task_id}."

    def step(self, action):
        SENT.append(action)
        self.n += 1
        if self.n < self.steps:
            return f"Step {self.n}.", 0.0, False, {}
        win = action == "win"
        return ("Won." if win else "Lost."), float(win), True, {"success": win}


class NoteStrategy(Strategy):
    """First a note (not an action), kept in context."""

    name = "note"
    keep_in_context = ("note",)

    def message(self, traj, text):
        if not traj.turns:
            return f"{text}\n\nWrite a note first.", "note"
        return text, ACTION

    def follow_up(self, traj, turn):
        return "Now act."

    def reply_tokens(self, kind):
        return 20


class RetryStrategy(Strategy):
    """Two attempts; the second one's first message starts with a memory line."""

    name = "retry"
    max_attempts = 2

    async def play(self, loop, task):
        first = loop.new_trajectory(task)
        await loop.play(task, first, self)
        if first.success:
            return [first]
        second = loop.new_trajectory(task, attempt=2, first=first)
        second.memory = ["remember to say win"]
        await loop.play(task, second, self)
        return [first, second]

    def message(self, traj, text):
        if not traj.turns and traj.memory:
            return f"Memory: {traj.memory[0]}\n\n{text}", ACTION
        return text, ACTION


def test_default_trajectories_carry_attempt_links(smol_tokenizer):
    engine = ScriptedEngine(smol_tokenizer, ["win"])
    traj = run_rollout(local_parts(engine, GuessEnv), [(3, 0)], max_turns=2, seed=0)[0]
    assert traj.success and traj.attempt == 1 and traj.first_episode_id == traj.episode_id == "s0-e0-t3"
    assert traj.memory == [] and [t.kind for t in traj.turns] == ["action"]


def test_a_note_is_kept_in_the_episode_and_the_window_but_not_sent(smol_tokenizer, monkeypatch):
    monkeypatch.setattr(GuessEnv, "steps", 4)
    SENT.clear()
    engine = ScriptedEngine(smol_tokenizer, ["My note: say win at the end.", "go", "go", "go", "win"])
    parts = local_parts(engine, GuessEnv, strategy=NoteStrategy(), history_window=1)
    traj = run_rollout(parts, [(0, 0)], max_turns=6, seed=0)[0]
    assert traj.success and SENT == ["go", "go", "go", "win"]  # the note never reached the env
    note, *acts = traj.turns
    assert (note.kind, note.action, note.observation) == ("note", None, "Now act.")
    assert [t.kind for t in acts] == ["action"] * 4
    ids, mask = traj.token_ids, traj.loss_mask
    assert "Write a note first." in smol_tokenizer.decode(ids[: traj.prompt_len])
    assert mask[note.start : note.end] == [1] * (note.end - note.start)  # generated: trained
    assert {i for i, m in enumerate(mask) if m} == {i for t in traj.turns for i in range(t.start, t.end)}
    # every prompt keeps the initial prompt, the note turn and (window 1) the latest turn only
    pinned = ids[note.start : acts[0].start]
    assert engine.prompts[1] == ids[: acts[0].start]
    for k in range(2, 5):
        assert engine.prompts[k] == ids[: traj.prompt_len] + pinned + ids[acts[k - 2].start : acts[k - 1].start]


def test_attempts_are_linked_and_memory_is_context(smol_tokenizer):
    def reply(prompt, _n):
        return "win" if "remember to say win" in prompt else "lose"

    engine = ScriptedEngine(smol_tokenizer, reply)
    done = []
    parts = local_parts(engine, GuessEnv, strategy=RetryStrategy())
    trajs = run_rollout(parts, [(5, 0), (6, 1)], max_turns=3, seed=0, progress=lambda d, n: done.append((d, n)))
    assert [(t.task_id, t.attempt, t.success) for t in trajs] == [(5, 1, False), (5, 2, True), (6, 1, False),
                                                                   (6, 2, True)]
    a1, a2 = trajs[:2]
    assert a2.episode_id == "s0-e0-t5-a2" and a2.first_episode_id == a1.episode_id == a1.first_episode_id
    assert a1.group_id == a2.group_id == 0 and a2.memory == ["remember to say win"]
    head = smol_tokenizer.decode(a2.token_ids[: a2.prompt_len])
    assert "Memory: remember to say win\n\nTask 5." in head
    assert set(a2.loss_mask[: a2.prompt_len]) == {0}  # the memory is context, never trained
    assert done == [(1, 2), (2, 2)] or sorted(done) == [(1, 2), (2, 2)]  # progress counts tasks
