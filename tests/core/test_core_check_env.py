"""agentgym_core.testing.check_env catches each broken rule of the BaseEnv contract."""
import random

import pytest

from agentgym_core import BaseEnv
from agentgym_core.testing import EnvContractError, check_env


class GoodEnv(BaseEnv):
    instruction = "Say 'win'."
    action_format = "free"

    def reset(self, *, task_id=None, seed=None):
        self.target = random.Random(task_id).randint(0, 9)
        return f"target {self.target}"

    def step(self, action):
        done = action.strip() == "win"
        return ("won" if done else "say win"), float(done), done, {"success": done}


class NotReproducible(GoodEnv):
    def reset(self, *, task_id=None, seed=None):
        return f"target {random.random()}"


class BadStep(GoodEnv):
    def step(self, action):
        return "obs", 1, "no", {}


class BadClose(GoodEnv):
    closed = False

    def close(self):
        if self.closed:
            raise RuntimeError("already closed")
        self.closed = True


class NoInstruction(GoodEnv):
    instruction = ""


def test_good_env_passes():
    check_env(GoodEnv)


@pytest.mark.parametrize(
    "cls, message",
    [
        (NotReproducible, "not reproducible"),
        (BadStep, "done must be a bool"),
        (BadClose, "not idempotent"),
        (NoInstruction, "instruction must be non-empty"),
    ],
)
def test_broken_envs_fail(cls, message):
    with pytest.raises(EnvContractError, match=message):
        check_env(cls)


def test_third_party_example_env_passes():
    from pathlib import Path

    from agentgym_core.testing import load_script

    path = Path(__file__).resolve().parents[2] / "examples" / "lightsout" / "my_lightsout" / "env.py"
    module = load_script(path, "lightsout_env_for_test")
    check_env(module.LightsOutEnv, actions=("press 0 0", "press x", "press 1 1"))
