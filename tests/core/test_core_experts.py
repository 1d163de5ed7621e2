"""Experts: the register_experts hook, name errors, playing an env, ``agentgym eval --expert`` and ``agentgym demos``."""
from __future__ import annotations

import json
import subprocess
import sys
import types

import pytest

from agentgym_core import BaseEnv, hookimpl
from agentgym_core.errors import UnknownNameError
from agentgym_core.experts import ExpertError, load_expert, play_expert, resolve_expert


class CountTo(BaseEnv):
    """Reach the number task_id + 2 by saying 'up'; 'peek' shows the count."""

    instruction = "Say up until you reach the target."
    action_format = "free"

    def splits(self):
        return {"train": range(0, 10), "test": range(10, 14)}

    def reset(self, *, task_id=None, seed=None):
        self.count, self.target = 0, int(task_id or 0) % 3 + 2
        return f"target {self.target}"

    def step(self, action):
        if action == "up":
            self.count += 1
        done = self.count >= self.target
        return f"count {self.count}", float(done), done, {"success": done}


def counter(env, observation):
    """Reads the env's state; receives observations it records."""
    counter.seen = [observation]
    while True:
        observation = yield "up"
        counter.seen.append(observation)


class Echo:
    """The class shape: one instance per episode, called with each observation."""

    def __init__(self):
        self.calls = 0

    def __call__(self, observation):
        self.calls += 1
        return "up" if self.calls < 10 else None


def lazy(env, observation):
    yield from ["up", "up"]


def _plugin():
    plugin = types.ModuleType("count_plugin")

    @hookimpl
    def register_envs(registry):
        registry.add("countto", f"{__name__}:CountTo")

    @hookimpl
    def register_experts(registry):
        registry.add("countto.counter", f"{__name__}:counter", description="says up")
        registry.add("countto.echo", f"{__name__}:Echo")
        registry.add("countto.lazy", f"{__name__}:lazy")

    plugin.register_envs, plugin.register_experts = register_envs, register_experts
    return plugin


def test_hook_register_experts(plugin_manager, register_plugin):
    register_plugin(_plugin(), "countplug")
    registry = plugin_manager.registry("experts")
    assert "countto.counter" in registry and registry.get("countto.counter").plugin == "countplug"
    assert resolve_expert(plugin_manager, "countto", "counter").name == "countto.counter"
    assert resolve_expert(plugin_manager, "countto", "countto.echo").name == "countto.echo"
    assert resolve_expert(plugin_manager, "countto", None).name == "countto.counter"  # the first registered


def test_unknown_expert_names_the_known_ones(plugin_manager, register_plugin):
    register_plugin(_plugin(), "countplug")
    with pytest.raises(UnknownNameError) as err:
        resolve_expert(plugin_manager, "countto", "countr")
    text = str(err.value)
    assert "Did you mean 'counter'?" in text and "countto.counter, countto.echo, countto.lazy" in text
    with pytest.raises(ExpertError, match="registers no expert"):
        resolve_expert(plugin_manager, "other", None)
    with pytest.raises(ExpertError, match="plays env 'countto', not 'other'"):
        resolve_expert(plugin_manager, "other", "countto.counter")


def test_an_expert_name_starts_with_its_env(plugin_manager, register_plugin):
    plugin = types.ModuleType("bad_expert")

    @hookimpl
    def register_experts(registry):
        registry.add("oracle", "x:y")

    plugin.register_experts = register_experts
    with pytest.raises(Exception, match="an expert's name is '<env>.<name>'"):
        register_plugin(plugin, "badexp")
        plugin_manager.registry("experts")


def test_play_sends_observations_and_stops_at_the_horizon(plugin_manager, register_plugin):
    register_plugin(_plugin(), "countplug")
    _, play = load_expert(plugin_manager, "countto", "counter")
    env = CountTo()
    ep = play_expert(play, env, 1, max_turns=10)  # target 3
    assert ep.success and ep.end_reason == "done" and [s.action for s in ep.steps] == ["up"] * 3
    assert counter.seen == ["target 3", "count 1", "count 2"]
    short = play_expert(play, env, 1, max_turns=2)
    assert not short.success and short.end_reason == "max_turns" and len(short.steps) == 2
    _, echo = load_expert(plugin_manager, "countto", "echo")  # a class: one instance per episode
    assert play_expert(echo, env, 0, max_turns=5).success


def test_yield_from_a_list_is_explained(plugin_manager, register_plugin):
    register_plugin(_plugin(), "countplug")
    _, play = load_expert(plugin_manager, "countto", "lazy")
    with pytest.raises(ExpertError, match="for action in actions: yield action"):
        play_expert(play, CountTo(), 2, max_turns=5)


CLI = [sys.executable, "-m", "agentgym_core.cli.main"]


def _cli(*args, cwd):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=300)


BUNDLED = [
    ("textcraft", "planner", []),
    ("babyai", "oracle", ["env.levels=[GoToLocal]"]),
    ("babyai", "heuristic", ["env.levels=[GoToLocal]"]),
    ("searchqa", "searcher", []),
    ("codefix", "scripted", []),
    ("ecommerce", "reference", []),
    ("webnav", "scripted", []),
    pytest.param("sciworld", "gold", ["env.gold_path=true", "--max-turns", "80"], marks=pytest.mark.slow),
]


@pytest.mark.parametrize("env,expert,extra", BUNDLED)
def test_eval_expert_writes_a_summary_beside_models(tmp_path, env, expert, extra):
    """Every bundled env's expert plays its held-out tasks through `agentgym eval --expert` (its upper bound)."""
    pytest.importorskip(f"agentgym_env_{env}")
    out = tmp_path / "expert.json"
    tasks = 2 if env == "sciworld" else 4
    proc = _cli("eval", "--expert", expert, f"env.name={env}", "--tasks", str(tasks), "--max-turns", "30", *extra,
                "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(out.read_text())
    assert summary["meta"]["model"] == f"expert:{env}.{expert}" and summary["meta"]["strategy"] == "expert"
    assert summary["overall"]["n"] == tasks and summary["overall"]["success_rate"] >= 0.5
    episodes = [json.loads(line) for line in out.with_suffix(".jsonl").read_text().splitlines()]
    assert all(e["turns"] and e["turns"][0]["action"] for e in episodes)
    bad = _cli("eval", "--expert", "planer", f"env.name={env}", *[x for x in extra if x.startswith("env.")], cwd=tmp_path)
    assert bad.returncode == 1 and f"Experts of '{env}': {env}." in bad.stderr


def test_an_expert_whose_settings_are_wrong_says_so_once(tmp_path):
    pytest.importorskip("agentgym_env_sciworld")
    proc = _cli("eval", "--expert", "gold", "env.name=sciworld", "--tasks", "1", cwd=tmp_path)
    assert proc.returncode == 1 and "add env.gold_path=true" in proc.stderr


def test_demos_come_from_train_ids_only(tmp_path):
    pytest.importorskip("agentgym_env_textcraft")
    from agentgym_core.config import load_config
    from agentgym_core.demos import DemosError, check_not_held_out, read_conversations, record_demos
    from agentgym_core.experts import build_env
    from agentgym_core.plugins import get_plugin_manager

    manager = get_plugin_manager()
    cfg = load_config(None, ["env.name=textcraft", "scheduler.turns=20"], manager=manager)
    out = tmp_path / "demos.jsonl"
    meta = record_demos(cfg, manager, out, episodes=12, say=lambda line: None)
    _, spec = build_env(cfg, manager)
    train, test = set(spec.ids("train")), set(spec.ids("test"))
    rows = read_conversations(out)
    assert len(rows) == 12 and meta["episodes"] == 12
    assert all(r["split"] == "train" and r["task_id"] in train and r["success"] for r in rows)
    assert set(meta["played_task_ids"]) <= train and not set(meta["played_task_ids"]) & test
    check_not_held_out(rows, spec, "test")  # fine
    rows[3]["task_id"] = min(test)
    with pytest.raises(DemosError, match="held-out task ids"):
        check_not_held_out(rows, spec, "test")
    proc = _cli("demos", "textcraft", "--split", "test", "--out", str(tmp_path / "x.jsonl"), cwd=tmp_path)
    assert proc.returncode == 1 and "held-out tasks" in proc.stderr and not (tmp_path / "x.jsonl").exists()


def test_demos_are_the_agents_conversation(tmp_path):
    """Instruction in the configured place, every reply an action the agent's parser reads back."""
    pytest.importorskip("agentgym_env_babyai")
    from agentgym_core.rollout.actions import parse_action

    out = tmp_path / "d.jsonl"
    proc = _cli("demos", "babyai", "--expert", "heuristic", "--episodes", "3", "--out", str(out), "env.levels=[GoToLocal]",
                "env.brief=true", "agent.instruction_position=after_observation", "scheduler.turns=10", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    meta = json.loads((tmp_path / "d.jsonl.meta.json").read_text())
    assert meta["agent"]["instruction_position"] == "after_observation" and meta["action_format"] == "free"
    for row in rows:
        roles = [m["role"] for m in row["messages"]]
        assert roles[0] == "user" and roles[-1] == "assistant"  # no system text: the instruction follows the observation
        assert row["messages"][0]["content"].endswith("Reply with one action.")
        replies = [m["content"] for m in row["messages"] if m["role"] == "assistant"]
        assert len(replies) == row["turns"] and all(parse_action(r, "free")[0] == r for r in replies)


def test_an_expert_cut_by_the_horizon_is_said_to_be(tmp_path):
    """The office expert needs 10-17 actions: at 4 turns every episode runs out of turns, and eval says its
    figure bounds the horizon, not the env; at 40 turns it does not."""
    pytest.importorskip("agentgym_env_office")
    short = _cli("eval", "--expert", "reference", "env.name=office", "--tasks", "4", "--max-turns", "4",
                 "--out", str(tmp_path / "short.json"), cwd=tmp_path)
    assert short.returncode == 0, short.stderr
    summary = json.loads((tmp_path / "short.json").read_text())
    assert summary["overall"]["end_reasons"].get("max_turns") == 4
    assert "4 of 4 episodes ran out of turns at the horizon of 4 turns (the expert's success is a bound of this " \
           "horizon, not of the env)" in short.stderr and "--max-turns N" in short.stderr
    full = _cli("eval", "--expert", "reference", "env.name=office", "--tasks", "4", "--max-turns", "40",
                "--out", str(tmp_path / "full.json"), cwd=tmp_path)
    assert full.returncode == 0, full.stderr
    assert json.loads((tmp_path / "full.json").read_text())["overall"]["success_rate"] == 1.0
    assert "ran out of turns" not in full.stderr


def test_demos_at_a_horizon_too_short_for_the_expert_stop_after_16_tasks(tmp_path):
    """The office expert needs 10-17 actions: at 6 turns none succeeds, and recording stops after 16 of the
    train split's tasks with the fix, instead of playing them all and writing no demonstration."""
    pytest.importorskip("agentgym_env_office")
    out = tmp_path / "d.jsonl"
    proc = _cli("demos", "office", "--episodes", "4", "--out", str(out), "scheduler.turns=6", cwd=tmp_path)
    assert proc.returncode == 1 and not out.exists()
    assert ("expert office.reference solved none of the first 16 office train tasks, and 16 of them ran out of "
            "turns at max_turns 6") in proc.stderr and "scheduler.turns" in proc.stderr
    ok = _cli("demos", "office", "--episodes", "2", "--out", str(out), "scheduler.turns=40", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert len(out.read_text().splitlines()) == 2


def test_horizon_note_counts_episodes_cut_at_the_horizon():
    from agentgym_core.evaluation import horizon_note

    def summary(cut, n, horizon=10):
        return {"overall": {"n": n, "end_reasons": {"max_turns": cut, "done": n - cut}}, "meta": {"max_turns": horizon}}

    assert horizon_note(summary(0, 8)) is None
    assert horizon_note(summary(1, 8)) is None  # 12.5% < 25%
    note = horizon_note(summary(2, 8))
    assert note.startswith("note: 2 of 8 episodes ran out of turns at the horizon of 10 turns (episodes cut there")
    assert "expert" in horizon_note(summary(8, 8), expert=True)
    assert horizon_note({"overall": {"n": 0, "end_reasons": {}}}) is None
    assert "horizon (" in horizon_note({"overall": {"n": 2, "end_reasons": {"max_turns": 2}}})  # no meta: no number


def test_experts_refuse_env_urls_instead_of_ignoring_them(tmp_path):
    """An expert plays the env in this process; env.urls would be silently unused, so eval and demos say so."""
    pytest.importorskip("agentgym_env_babyai")
    urls = "env.urls=[http://127.0.0.1:9]"
    for args in (("eval", "--expert", "heuristic", "env.name=babyai", "--tasks", "1", urls),
                 ("demos", "babyai", "--expert", "heuristic", "--episodes", "1", "--out", str(tmp_path / "d.jsonl"), urls)):
        proc = _cli(*args, cwd=tmp_path)
        assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
        assert "experts play babyai in this process, not through env servers, so env.urls (http://127.0.0.1:9) " \
               "would be ignored; drop it (env.urls=[])" in proc.stderr, proc.stderr
    assert not (tmp_path / "d.jsonl").exists()
