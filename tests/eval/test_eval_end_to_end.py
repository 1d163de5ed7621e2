"""``agentgym eval`` end to end: a tiny random model saved to a folder, a small in-test env,
real rollout through the hf engine; the table, JSON, Markdown and episode dump it writes."""
from __future__ import annotations

import asyncio
import json
import textwrap

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("agentgym_engine_hf")

from agentgym_core.cli.main import main
from agentgym_core.rundir import RunDir

pytestmark = pytest.mark.slow

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

ENV_MODULE = '''
from agentgym_core import BaseEnv, hookimpl


class CoinEnv(BaseEnv):
    """Even tasks are won by any reply; odd ones never end by themselves (the horizon stops them)."""

    instruction = "Reply with any word."
    action_format = "free"

    def reset(self, *, task_id=None, seed=None):
        self.task = task_id
        return f"Task {task_id}: say something."

    def step(self, action):
        win = self.task % 2 == 0
        return ("You win." if win else "Not yet."), float(win), win, ({"success": True} if win else {})

    def splits(self):
        return {"train": range(0, 10), "test": range(100, 106)}

    def category(self, task_id):
        return "even" if task_id % 2 == 0 else "odd"


@hookimpl
def register_envs(registry):
    registry.add("coin_eval_test", "coin_eval_env:CoinEnv", description="test env")
'''


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A byte-level BPE tokenizer with a ChatML template and a tiny random Llama, saved like any HF model."""
    from agentgym_hf.loading import tiny_random_model
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=320, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(["Reply with any word. Task 100: say something. You win. Not yet. assistant user system"] * 4, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = CHATML
    folder = tmp_path_factory.mktemp("tiny-model")
    tiny_random_model(fast).save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


@pytest.fixture
def coin_env(tmp_path, monkeypatch):
    """Registers the ``coin_eval_test`` env on the process-wide plugin manager the CLI uses."""
    from agentgym_core.plugins import get_plugin_manager

    (tmp_path / "coin_eval_env.py").write_text(ENV_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import coin_eval_env

    manager = get_plugin_manager()
    manager.register(coin_eval_env, "coin-eval-test")
    yield manager
    manager.unregister("coin-eval-test")


def write_config(path, model_dir):
    path.write_text(textwrap.dedent(f"""\
        model: {{path: {model_dir}, dtype: fp32, max_context: 512}}
        env: {{name: coin_eval_test}}
        scheduler: {{name: fixed, turns: 3}}
        rollout: {{max_new_tokens: 6, concurrency: 8, temperature: 1.0}}
        eval: {{tasks: 4, k: 2}}
        """))
    return path


def test_eval_cli_on_a_tiny_model(model_dir, coin_env, tmp_path, capsys):
    cfg = write_config(tmp_path / "eval.yaml", model_dir)
    out = tmp_path / "result.json"
    rc = main(["eval", "-c", str(cfg), "--model", str(model_dir), "--local", "--out", str(out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "| overall | 8 | 4 | 50.0% | 50.0% | 50.0% |" in captured.out  # tasks 100..103, k=2: evens win
    summary = json.loads(out.read_text())
    assert summary["k"] == 2 and summary["meta"]["split"] == "test" and summary["meta"]["max_turns"] == 3
    assert summary["categories"]["even"]["success_rate"] == 1.0 and summary["categories"]["odd"]["n"] == 4
    assert summary["categories"]["odd"]["end_reasons"] == {"max_turns": 4}
    assert "| even |" in out.with_suffix(".md").read_text()
    episodes = [json.loads(line) for line in out.with_suffix(".jsonl").read_text().splitlines()]
    assert len(episodes) == 8 and all(sum(e["loss_mask"]) > 0 for e in episodes)

    # A run directory as --model: its latest checkpoint and its own config; results land in run/eval/.
    run = tmp_path / "runs" / "r"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "step_000002").symlink_to(model_dir, target_is_directory=True)
    import shutil

    shutil.copytree(model_dir, run / "checkpoints" / "step_000004")
    write_config(run / "config.yaml", model_dir)
    assert main(["eval", "--model", str(run), "--local", "--tasks", "2", "--k", "1"]) == 0
    written = RunDir(run).eval_results()
    assert list(written) == ["test-k1"] and written["test-k1"]["meta"]["model"].endswith("step_000004")
    assert written["test-k1"]["overall"]["n"] == 2


def test_evaluate_function_for_the_trainer(model_dir, coin_env, tmp_path):
    """The trainer's entry point: ``evaluate`` with a live engine and a local pool."""
    import functools

    from agentgym_engine_hf.engine import HFEngine
    from coin_eval_env import CoinEnv

    from agentgym_core.assembly import local_parts
    from agentgym_core.evaluation import EvalPlan, evaluate

    engine = HFEngine(str(model_dir), dtype="fp32")
    parts = local_parts(engine, functools.partial(CoinEnv), name="coin", max_new_tokens=4)
    plan = EvalPlan(split="test", k=3, tasks=3, temperature=1.0, max_turns=2)
    summary, trajectories = asyncio.run(evaluate(parts, plan, model=str(model_dir),
                                                 dump_path=tmp_path / "eval" / "before.jsonl"))
    assert len(trajectories) == 9 and {t.group_id for t in trajectories} == {0, 1, 2}
    assert sorted({t.task_id for t in trajectories}) == [100, 102, 104]  # spread over the test split
    assert summary["overall"]["pass_at_k"] == pytest.approx(1.0)  # even tasks are always won
    assert summary["categories"]["even"]["n"] == 9 and "odd" not in summary["categories"]
    assert summary["meta"]["env"] == "coin" and summary["meta"]["tasks"] == 3
    assert (tmp_path / "eval" / "before.jsonl").is_file()
