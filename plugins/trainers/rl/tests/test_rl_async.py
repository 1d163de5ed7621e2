"""Asynchronous training (``trainer.max_staleness``): the staleness bound on hand-made schedules, versions per
turn, log-probs of the version that sampled each turn, the watchdog on both sides, and the pipelined mode
reproducing itself bit for bit, across two runs and across kill -9 and ``--resume``."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("agentgym_engine_hf")

sys.path.insert(0, str(Path(__file__).parent))
from agentgym_hf.testing import tiny_model_dir  # noqa: E402
from rl_helpers import kill_after_checkpoint, tiny_config, train_cli  # noqa: E402

from agentgym_core.rollout.trajectory import Trajectory, Turn  # noqa: E402
from agentgym_trainer_rl.asynchronous import (  # noqa: E402
    Played, Stalled, VersionedEngine, WeightStore, load_pending, save_pending, stale_groups)

PIPELINED = {"trainer.max_staleness": "1", "trainer.steps": "5", "rollout.concurrency": "4", "rollout.lockstep": "true",
             "trainer.save_every": "1",
             "trainer.finetune": "lora", "trainer.lora_targets": "[q_proj,v_proj]", "trainer.lr": "5e-2",
             "trainer.entropy_coef": "0.1"}  # a gradient in every group: each version differs from the last


def _episode(group: int, versions: list[int]) -> Trajectory:
    turns = [Turn(start=0, end=1, text="x", action="x", version=v) for v in versions]
    return Trajectory(episode_id=f"g{group}-{versions}", env_name="toy", task_id=group, group_id=group, token_ids=[1],
                      loss_mask=[1], logprobs=[0.0], prompt_len=0, turns=turns)


def test_a_group_is_stale_when_any_turn_of_any_episode_is_older_than_the_bound():
    step = 5  # the update of step 5 updates version 5; with K = 2 the oldest usable version is 3
    trajs = [_episode(0, [3, 4]), _episode(0, [4, 5]),  # group 0: oldest turn 3, within the bound
             _episode(1, [4, 4]), _episode(1, [2, 5]),  # group 1: one turn of version 2 spoils the group
             _episode(2, [5])]
    kept, stale, hist = stale_groups(trajs, step, max_staleness=2)
    assert stale == {1}
    assert [t.group_id for t in kept] == [0, 0, 2]
    assert hist == {2: 1, 1: 1, 0: 1}  # each kept episode by the age of its oldest turn
    kept, stale, _ = stale_groups(trajs, step, max_staleness=3)
    assert stale == set() and len(kept) == 5
    kept, stale, _ = stale_groups(trajs, step, max_staleness=0)
    assert stale == {0, 1} and len(kept) == 1


def test_the_worker_waiting_for_weights_names_the_trainer_when_the_watchdog_fires():
    store = WeightStore(first=3)
    store.publish(4, None)
    store.wait_for(4, timeout=1.0, stopped=lambda: False)  # there already: no wait
    start = time.monotonic()
    with pytest.raises(Stalled, match="waited 0 s for the trainer to publish weights version 5 .it has 4.: the trainer"):
        store.wait_for(5, timeout=0.3, stopped=lambda: False)
    assert time.monotonic() - start >= 0.3


def _engine(model_dir: Path, weights: dict | None = None):
    from agentgym_engine_hf.engine import HFEngine
    from transformers import AutoModelForCausalLM, AutoTokenizer

    lm = AutoModelForCausalLM.from_pretrained(str(model_dir))
    if weights is not None:
        lm.load_state_dict(weights, strict=False)
    lm.eval()
    return HFEngine(lm, AutoTokenizer.from_pretrained(str(model_dir)), own_weights=True, dtype="fp32")


def test_each_turn_is_stamped_with_and_scored_by_the_version_that_sampled_it(tmp_path):
    """A partial rollout: the engine follows the newest weights between calls, so an episode's second turn
    comes from version 1 while its first came from version 0; each turn's log-probs are those a fresh
    engine holding that version computes for the same tokens."""
    from agentgym_core.engine import GenerationRequest, SamplingParams

    torch.manual_seed(0)
    model = tiny_model_dir(tmp_path)
    engine = _engine(model)
    store = WeightStore(first=0)
    versioned = VersionedEngine(engine, store, 0, follow=True)
    prompt = [1, 5, 9, 3, 7]
    first = versioned.generate([GenerationRequest(prompt, SamplingParams(max_new_tokens=6, temperature=1.0, seed=11))])[0]
    assert first.weight_version == 0
    changed = {k: v + 0.05 * torch.randn_like(v) for k, v in engine.model.state_dict().items()
               if k.endswith("q_proj.weight") or k.endswith("down_proj.weight")}
    store.publish(1, changed)
    store.publish(2, None)  # a step that trained nothing: the same weights under a new version
    context = prompt + first.token_ids + [4, 4]
    second = versioned.generate([GenerationRequest(context, SamplingParams(max_new_tokens=6, temperature=1.0, seed=12))])[0]
    assert second.weight_version == 2 and versioned.loads == 1  # one load for versions 1 and 2
    assert store.state(0) is None and 0 not in store._states  # versions the engine moved past are forgotten

    for result, ids, weights, seed in ((first, prompt, None, 11), (second, context, changed, 12)):
        again = _engine(model, weights).generate([GenerationRequest(ids, SamplingParams(max_new_tokens=6, temperature=1.0, seed=seed))])[0]
        assert again.token_ids == result.token_ids
        torch.testing.assert_close(torch.tensor(again.logprobs), torch.tensor(result.logprobs), rtol=0, atol=1e-5)


def _run(tmp_path: Path, name: str, **extra: str):
    from agentgym_core.config import build_component, load_config
    from agentgym_core.plugins import get_plugin_manager

    torch.set_num_threads(1)
    manager = get_plugin_manager()
    overrides = tiny_config(tiny_model_dir(tmp_path), tmp_path / "runs", name=name,
                            **{**PIPELINED, "trainer.steps": "3", "trainer.save_every": "0", **extra})
    cfg = load_config(None, overrides, manager)
    trainer = build_component(manager, "trainers", cfg.trainer, cfg, manager)
    trainer.fit()
    rows = [json.loads(x) for x in (tmp_path / "runs" / name / "metrics.jsonl").read_text().splitlines()]
    return trainer, rows


@pytest.mark.slow
def test_k0_is_the_synchronous_trainer(tmp_path):
    pytest.importorskip("agentgym_env_babyai")
    trainer, rows = _run(tmp_path, "sync", **{"trainer.max_staleness": "0"})
    assert trainer.worker is None and "staleness_max" not in rows[0]
    for f in (tmp_path / "runs" / "sync" / "trajectories").glob("*.jsonl"):
        assert '"version"' not in f.read_text()  # the files of a synchronous run are as they were


@pytest.mark.slow
def test_a_group_dropped_as_stale_is_played_again_even_at_the_last_step(tmp_path, monkeypatch):
    """The worker plays one more group for each one the trainer drops, also once it has started every step's
    groups: a drop at the last step used to leave the trainer one group short ("the rollout worker ended
    before the batch of step 3"). Whether a group goes stale depends on timing, so the trainer's staleness
    check is made to drop the first group it takes at the last step; the trainer and worker are the real ones."""
    pytest.importorskip("agentgym_env_babyai")
    import agentgym_trainer_rl.asynchronous as asynchronous

    real, dropped = asynchronous.stale_groups, []

    def stale_groups(trajs, step, max_staleness):
        groups = {t.group_id for t in trajs}
        if step == 2 and not dropped and len(groups) == 1:  # (the check of one group as the trainer takes it)
            dropped.extend(t.episode_id for t in trajs)
            return [], groups, {}
        return real(trajs, step, max_staleness)

    monkeypatch.setattr(asynchronous, "stale_groups", stale_groups)
    trainer, rows = _run(tmp_path, "replaced", **{"trainer.async_mode": "async"})
    assert [r["step"] for r in rows] == [1, 2, 3]
    assert [r["stale_dropped"] for r in rows] == [0, 0, 2] and all(r["episodes"] == 4 for r in rows)
    last = [json.loads(line) for line in (tmp_path / "runs" / "replaced" / "trajectories" / "step_000003.jsonl")
            .read_text().splitlines()]
    ids = [t["episode_id"] for t in last]
    assert len(ids) == 4 and not set(ids) & set(dropped), (ids, dropped)
    assert any(int(i.split("-e")[1].split("-")[0]) >= 2 * 2 for i in ids), ids  # the replacement: numbered past
    # the step's own groups (index >= tasks_per_step * group_size), so no episode id is played twice


@pytest.mark.slow
@pytest.mark.parametrize("partial", ["continue", "restart"])
def test_async_mode_never_trains_on_a_token_older_than_the_bound(tmp_path, partial):
    pytest.importorskip("agentgym_env_babyai")
    trainer, rows = _run(tmp_path, partial, **{"trainer.async_mode": "async", "trainer.partial_rollout": partial,
                                               "trainer.steps": "4"})
    assert [r["step"] for r in rows] == [1, 2, 3, 4]
    for r in rows:
        assert r["staleness_max"] <= 1 and r["episodes"] == 4
        assert 0 <= r["trainer_idle_frac"] <= 1 and 0 <= r["rollout_idle_frac"] <= 1
    for f in sorted((tmp_path / "runs" / partial / "trajectories").glob("step_*.jsonl")):
        step = int(f.stem[5:]) - 1
        for line in f.read_text().splitlines():
            versions = [t["version"] for t in json.loads(line)["turns"]]
            assert versions == sorted(versions) and step - min(versions) <= 1, (step, versions)
            if partial == "restart":
                assert len(set(versions)) == 1  # a restarted episode was sampled by one version
    assert not trainer.worker._thread.is_alive()


@pytest.mark.slow
def test_the_trainer_waiting_on_the_rollout_names_it_when_the_watchdog_fires(tmp_path):
    pytest.importorskip("agentgym_env_babyai")
    from agentgym_trainer_rl.asynchronous import Stalled as Raised

    with pytest.raises(Raised, match=r"step 1: the trainer waited 0 s for the rollout worker .*the rollout side is stuck"):
        _run(tmp_path, "stuck", **{"trainer.watchdog_s": "0.01"})


def _steps(run: Path) -> dict[int, list]:
    out = {}
    for f in sorted((run / "trajectories").glob("step_*.jsonl")):
        rows = [json.loads(line) for line in f.read_text().splitlines()]
        out[int(f.stem[5:])] = [(r["task_id"], r["group_id"], r["token_ids"], r["logprobs"],
                                 [t["version"] for t in r["turns"]]) for r in rows]
    return out


def _metrics(run: Path) -> list[dict]:
    keep = ("loss", "pg_loss", "entropy", "grad_norm", "reward_mean", "staleness_max", "horizon")
    return [{k: m[k] for k in keep} for m in map(json.loads, (run / "metrics.jsonl").read_text().splitlines())]


@pytest.mark.slow
def test_the_pipelined_mode_reproduces_itself_bit_for_bit_and_across_kill_9(tmp_path):
    pytest.importorskip("agentgym_env_babyai")
    model = tiny_model_dir(tmp_path)
    runs = tmp_path / "runs"
    proc = train_cli(tiny_config(model, runs, name="first", **PIPELINED))
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
    a = _steps(runs / "first")
    assert sorted(a) == [1, 2, 3, 4, 5]
    for step, episodes in a.items():  # batch s (0-based) sampled by exactly version max(0, s - 1)
        assert all(set(versions) == {max(0, step - 2)} for *_, versions in episodes), step
    assert [m["staleness_max"] for m in _metrics(runs / "first")] == [0, 1, 1, 1, 1]

    # A second run of the same config, killed after a checkpoint and resumed: its steps before the kill are
    # a fresh process reproducing the first run, those after it the resume; every one must equal the first's.
    victim = train_cli(tiny_config(model, runs, name="killed", **PIPELINED), start_new_session=True)
    resumed_from = kill_after_checkpoint(victim, runs / "killed", 2)
    assert 2 <= resumed_from < 5
    ckpt = runs / "killed" / "checkpoints" / f"step_{resumed_from:06d}"
    assert (ckpt / "pending" / "rank0" / f"step_{resumed_from:06d}.jsonl").is_file()  # the batch played ahead
    again = train_cli(["--resume", str(runs / "killed")])
    out, _ = again.communicate(timeout=600)
    assert again.returncode == 0, out
    c = _steps(runs / "killed")
    assert sorted(c) == [1, 2, 3, 4, 5]
    for step in range(1, 6):
        when = "before the kill" if step <= resumed_from else f"after resuming from step {resumed_from}"
        assert c[step] == a[step], f"step {step} differs from the first run ({when})"
    assert _metrics(runs / "killed") == _metrics(runs / "first")
    sa = json.loads((runs / "first" / "checkpoints" / "step_000005" / "trainer_state.json").read_text())
    sc = json.loads((runs / "killed" / "checkpoints" / "step_000005" / "trainer_state.json").read_text())
    assert sa["param_sha256"] == sc["param_sha256"], "weights after the resumed run differ"


def test_asynchronous_settings_are_checked_and_the_behaviour_weight_is_on_by_default():
    from agentgym_trainer_rl.config import RLConfig

    assert RLConfig().tis_cap is None and RLConfig(max_staleness=0).tis_cap is None  # synchronous: as it was
    assert RLConfig(max_staleness=2).tis_cap == 2.0 and RLConfig(max_staleness=2, tis_cap=1.5).tis_cap == 1.5
    with pytest.raises(ValueError, match="use trainer.async_mode=pipelined, or trainer.dynamic_sampling=false"):
        RLConfig(max_staleness=1, async_mode="async", dynamic_sampling=True)
    assert RLConfig(max_staleness=1, dynamic_sampling=True).async_mode == "pipelined"  # the worker refills groups
    with pytest.raises(ValueError, match="strategy=ddp"):
        RLConfig(max_staleness=1, strategy="fsdp")
    with pytest.raises(ValueError, match="async_mode must be one of pipelined, async, got 'asynch'"):
        RLConfig(max_staleness=1, async_mode="asynch")
    with pytest.raises(ValueError, match="max_staleness"):
        RLConfig(max_staleness=-1)


def test_batches_played_ahead_keep_their_extra_rounds_through_a_checkpoint(tmp_path):
    """A pipelined run with dynamic sampling took extra task ids for a batch played ahead: the checkpoint says how
    many, so the resumed worker's and trainer's cursors skip the same ids."""
    played = {3: Played(3, [_episode(0, [2]), _episode(5, [2])], {"gen_tokens": 9}, horizon=4, extra_ids=3, rounds=2)}
    save_pending(tmp_path, played, rank=0)
    back = load_pending(tmp_path, rank=0)
    assert list(back) == [3] and (back[3].extra_ids, back[3].rounds, back[3].horizon) == (3, 2, 4)
    assert [t.group_id for t in back[3].trajectories] == [0, 5] and back[3].stats == {"gen_tokens": 9}
    assert load_pending(tmp_path, rank=1) == {}
