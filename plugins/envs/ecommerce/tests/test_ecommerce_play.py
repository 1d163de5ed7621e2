"""A person serves a customer in ``agentgym env play ecommerce``: typed lines on stdin, to success."""
from __future__ import annotations

import subprocess
import sys

from agentgym_env_ecommerce.agents import ExpertAgent
from agentgym_env_ecommerce.env import ECommerceServiceEnv
from agentgym_service.play import play

AGENTGYM = [sys.executable, "-m", "agentgym_core.cli.main"]


def _play(task_id: int, lines: list[str]) -> str:
    out = subprocess.run([*AGENTGYM, "env", "play", "ecommerce", "--task-id", str(task_id)],
                         input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_a_person_typing_calls_and_replies_wins_a_task_and_typos_get_feedback():
    env = ECommerceServiceEnv()
    task_id = next(t for t in env.splits()["test"] if env.category(t) == "cancel")
    reward, _, steps = play(env, task_id, ExpertAgent())
    assert reward == 1.0
    lines = [steps[0][0], "get_ordr(#W1)"] + [action for action, _ in steps[1:]]  # a typo: feedback, nothing happens
    out = _play(task_id, lines)
    assert "Policy:" in out and "respond(message): talk to the customer" in out
    assert "Did you mean get_order?" in out and "(invalid action)" in out
    assert f"Episode success after {len(lines)} steps, return 1." in out
