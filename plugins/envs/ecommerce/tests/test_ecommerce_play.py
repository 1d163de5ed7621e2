"""A person serves a customer in ``agentgym env play ecommerce``: typed lines on stdin, to success."""
from __future__ import annotations

import subprocess
import sys

from agentgym_env_ecommerce.agents import ReferenceAgent, play
from agentgym_env_ecommerce.env import ECommerceServiceEnv

AGENTGYM = [sys.executable, "-m", "agentgym_core.cli.main"]


def _play(task_id: int, lines: list[str]) -> str:
    out = subprocess.run([*AGENTGYM, "env", "play", "ecommerce", "--task-id", str(task_id)],
                         input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_a_person_typing_calls_and_replies_cancels_an_order():
    env = ECommerceServiceEnv()
    task_id = next(t for t in env.splits()["test"] if env.category(t) == "cancel" and env.reset(task_id=t)
                   and env.scenario.persona.knows_email)
    s = env.scenario
    order = s.db["orders"][s.order_id]
    lines = [  # what a person would type after reading each answer; quotes are optional
        "respond(Hello! What is your email, the order id, and the reason for cancelling?)",
        f"find_customer({s.customer['email']})",
        f"get_ordr({s.order_id})",  # a typo: feedback, nothing happens
        f"get_order({s.order_id})",
        f"respond(I will cancel order {s.order_id} and refund ${order['total']:.2f} to "
        f"{order['payment_method_id']}. Do you confirm?)",
        f'cancel_order({s.order_id}, "{s.details["reason"]}")',
        "respond(Done, your order is cancelled.)",
    ]
    out = _play(task_id, lines)
    assert "Policy:" in out and "respond(message): talk to the customer" in out
    assert "Did you mean get_order?" in out and "(invalid action)" in out
    assert f"Episode success after {len(lines)} steps, return 1." in out


def test_the_reference_agents_lines_win_an_exchange_at_the_terminal():
    env = ECommerceServiceEnv()
    task_id = next(t for t in env.splits()["test"] if env.category(t) == "exchange")
    reward, _, steps = play(env, task_id, ReferenceAgent())
    assert reward == 1.0
    out = _play(task_id, [action for action, _ in steps])
    assert f"Episode success after {len(steps)} steps, return 1." in out
