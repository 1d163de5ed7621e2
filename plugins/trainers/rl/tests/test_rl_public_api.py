"""The package's public names (what bench/ and other code use instead of its modules) all resolve,
and importing the package loads no torch."""
import subprocess
import sys


def test_public_names_resolve_lazily():
    code = ("import sys, agentgym_trainer_rl as rl\n"
            "assert 'torch' not in sys.modules\n"
            "missing = [n for n in rl.__all__ if getattr(rl, n, None) is None]\n"
            "assert not missing, missing\n"
            "assert rl.ALGORITHMS['grpo'] is not None and callable(rl.build_batch)\n"
            "try:\n    rl.Nope\nexcept AttributeError as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "has no attribute 'Nope'" in out.stdout
