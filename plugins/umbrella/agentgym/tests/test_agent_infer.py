"""``LLMAgent(base_model=...).infer``: one reply to an observation, or one episode of an env."""
from __future__ import annotations

import pytest
from agentgym_hf.loading import tiny_random_model

from agentgym_core import BaseEnv
from agentgym.agents import LLMAgent, Reply
from agentgym_core.rollout.trajectory import Trajectory


class DoorEnv(BaseEnv):
    instruction = "Open the door. Reply with the action only."
    action_format = "free"

    def __init__(self, **options):
        super().__init__(**options)
        self.closed = False

    def reset(self, *, task_id=None, seed=None):
        self.steps = 0
        return "A closed door."

    def step(self, action):
        self.steps += 1
        return "Nothing happens.", 0.0, self.steps >= 2, {"success": False}

    def close(self):
        self.closed = True


@pytest.fixture(scope="module")
def model_dir(hf_tokenizer, tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny-agent")
    tiny_random_model(hf_tokenizer, seed=5).save_pretrained(path)
    hf_tokenizer.save_pretrained(path)
    return str(path)


def test_infer_observation_returns_reply(model_dir):
    agent = LLMAgent(base_model=model_dir, dtype="fp32", max_new_tokens=8, threads=1)
    reply = agent.infer("You see a key.", instruction="Pick things up.", action_format="react")
    assert isinstance(reply, Reply)
    assert reply.text and reply.action is None and "Action:" in reply.parse_error
    again = agent.infer("You see a key.", instruction="Pick things up.", action_format="react")
    assert again.text == reply.text  # greedy by default
    sampled = LLMAgent(base_model=model_dir, dtype="fp32", max_new_tokens=8, temperature=1.0, seed=1, threads=1)
    free = sampled.infer("You see a key.", action_format="free")
    assert str(free) == free.action == free.text.strip()


def test_infer_env_plays_an_episode_without_closing_a_lent_env(model_dir):
    agent = LLMAgent(base_model=model_dir, dtype="fp32", max_new_tokens=6, max_turns=5, temperature=1.0, threads=1)
    traj = agent.infer(DoorEnv)
    assert isinstance(traj, Trajectory) and traj.end_reason == "done" and traj.num_turns == 2
    env = DoorEnv()
    traj2 = agent.infer(env)
    assert traj2.token_ids == traj.token_ids and not env.closed
    agent.close()
