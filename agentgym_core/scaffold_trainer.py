"""The ``--kind trainer`` template of ``agentgym new plugin``: a small real trainer on core's lifecycle."""

TRAINER_COMPONENT = '''\
"""A trainer that learns which system prompt makes the model act best: UCB1 over candidate prompts.

It shows what a trainer plugin writes on top of core's lifecycle (agentgym_core.trainer.Trainer,
docs/plugin_hooks.md "register_trainers"): build() assembles the run's parts, train_step() plays a
step's tasks, save()/restore() keep its state in checkpoints. The run directory, the before/after
evaluations (with the best prompt so far), checkpoint cadence, hooks, Ctrl-C and --resume are core's.
"""
import contextlib
import json
import math
import zlib
from dataclasses import dataclass, field

from agentgym_core import StepResult, TaskCursor, Trainer, TrainerConfig


@dataclass
class ${cls}Config(TrainerConfig):
    """Options of the ``$name`` trainer (the ``trainer`` section: ``trainer: {name: $name, explore: 2.0}``)."""

    #: Candidate system prompts (each goes before the env's instruction; "" for none).
    prompts: list = field(default_factory=lambda: ["", "Reply with one action only.", "Think briefly, then act."])
    #: UCB1's exploration weight (0: always the best so far).
    explore: float = 1.0

    def __post_init__(self):
        super().__post_init__()
        if not self.prompts:
            raise ValueError("trainer.prompts must hold at least one prompt")


def choose(counts, rewards, explore):
    """UCB1 (Auer et al. 2002): an untried arm first, else the highest mean + explore * sqrt(2 ln n / n_i)."""
    for arm, n in enumerate(counts):
        if n == 0:
            return arm
    total = sum(counts)
    return max(range(len(counts)),
               key=lambda a: rewards[a] / counts[a] + explore * math.sqrt(2 * math.log(total) / counts[a]))


class $cls(Trainer):
    Config = ${cls}Config

    def build(self):
        self.assemble_parts()
        self.parts.load_engine(self.config.model.path)
        self.base = self.parts.agent
        self.cursor = TaskCursor(list(self.parts.env.ids("train")), self.config.run.seed)
        n = len(self.settings.prompts)
        self.counts, self.rewards = [0] * n, [0.0] * n

    def best(self):
        means = [r / c if c else float("-inf") for r, c in zip(self.rewards, self.counts)]
        return self.settings.prompts[max(range(len(means)), key=means.__getitem__)]

    def train_step(self, step):
        from agentgym_core.rollout import rollout  # named like its package, so imported from it

        cfg = self.config
        arm = choose(self.counts, self.rewards, self.settings.explore)
        self.parts.agent = self.base.replace(system_prompt=self.settings.prompts[arm] or None)
        ids = self.cursor.take(cfg.rollout.tasks_per_step)
        tasks = [(tid, g) for g, tid in enumerate(ids) for _ in range(cfg.rollout.group_size)]
        horizon = self.parts.scheduler.max_turns(step)
        seed = zlib.crc32(f"{cfg.run.seed}/{step}".encode())
        trajs = self.run_async(rollout(self.parts, tasks, max_turns=horizon, step=step + 1, seed=seed))
        self.parts.score(trajs)
        ok = [t for t in trajs if not t.failed]
        reward = sum(sum(t.rewards) for t in ok) / max(1, len(ok))
        self.counts[arm] += 1
        self.rewards[arm] += reward
        metrics = {"step": step + 1, "arm": float(arm), "reward_mean": reward,
                   "success_rate": sum(bool(t.success) for t in ok) / max(1, len(ok)), "episodes": float(len(trajs))}
        return StepResult(metrics, trajs)

    def save(self, step, metrics, nonfinite):
        state = {"step": step + 1, "nonfinite": nonfinite, "counts": self.counts, "rewards": self.rewards,
                 "cursor": self.cursor.state_dict(), "best_prompt": self.best()}
        return self.run_dir.save_checkpoint(
            step + 1, lambda folder: (folder / "trainer_state.json").write_text(json.dumps(state, indent=2)),
            self.settings.keep_checkpoints)

    def restore(self, checkpoint):
        state = json.loads((checkpoint / "trainer_state.json").read_text())
        self.counts, self.rewards = state["counts"], state["rewards"]
        self.cursor.load_state_dict(state["cursor"])
        return state

    @contextlib.contextmanager
    def inference(self):
        """Evaluations play with the best prompt so far."""
        self.parts.agent = self.base.replace(system_prompt=self.best() or None)
        yield
'''

TRAINER_TEST = '''\
from agentgym_core import check_component_options, get_plugin_manager

from $package.component import choose


def test_registered():
    manager = get_plugin_manager(fresh=True)
    assert "$name" in manager.registry("trainers")
    assert manager.registry("trainers").load("$name").__name__ == "$cls"


def test_options_are_declared_once_in_config():
    check_component_options(get_plugin_manager(fresh=True).registry("trainers").load("$name"), "trainers")


def test_ucb_tries_every_prompt_then_prefers_the_best():
    assert choose([0, 3], [0.0, 3.0], 1.0) == 0
    assert choose([10, 10], [9.0, 1.0], 0.0) == 0
    assert choose([100, 1], [90.0, 0.5], 1.0) == 1  # rarely tried: explored
'''
