"""Training across processes against env servers given by URL (``env.urls``), as across machines:
two servers started separately, two training processes; every episode runs on those servers, and
the processes play disjoint task groups."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("agentgym_env_babyai")
pytest.importorskip("agentgym_engine_hf")

sys.path.insert(0, str(Path(__file__).parent))
from agentgym_hf.testing import tiny_model_dir  # noqa: E402
from rl_helpers import tiny_config  # noqa: E402

ENV = dict(os.environ, OMP_NUM_THREADS="1", AGENTGYM_LOAD_PLUGINS="babyai,hf,rl,scaling")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_two_processes_share_env_servers_given_by_url(tmp_path):
    import httpx

    from agentgym_core.env.launcher import EnvLauncher

    model = tiny_model_dir(tmp_path)
    runs = tmp_path / "runs"
    with EnvLauncher("babyai", servers=2, options={"levels": ["GoToRedBallGrey"]}, ttl=0) as servers:
        urls = "[" + ",".join(servers.urls) + "]"
        args = tiny_config(model, runs, name="urls", **{"trainer.steps": "2", "trainer.local_envs": "false",
                                                        "rollout.tasks_per_step": "4", "env.urls": urls})
        proc = subprocess.run([sys.executable, "-m", "agentgym_core.cli.main", "train", "--num-processes", "2", *args],
                              env=ENV, capture_output=True, text=True, timeout=800)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        created = [httpx.get(f"{url}/health", timeout=10).json()["created"] for url in servers.urls]
    run = runs / "urls"
    for step in (1, 2):
        rows = [json.loads(x) for x in (run / "trajectories" / f"step_{step:06d}.jsonl").read_text().splitlines()]
        # 4 task groups of 2 episodes, each group played once, by one process (groups 0, 2 and 1, 3)
        assert Counter(r["group_id"] for r in rows) == {0: 2, 1: 2, 2: 2, 3: 2}
        assert len({r["task_id"] for r in rows}) == 4 and not any(r["failed"] for r in rows)
    # every episode of both processes ran on the given servers, spread over both
    assert sum(created) == 16 and min(created) > 0, created
