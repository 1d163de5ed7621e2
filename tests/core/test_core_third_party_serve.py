"""A third-party env installed with pip is served by `agentgym env serve` and speaks the AgentGym wire format."""
import os
import re
import itertools
import subprocess
import sys

import httpx


def test_pip_installed_third_party_env_over_the_wire(third_party_site):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTGYM_")}
    env.update(PYTHONPATH=str(third_party_site), AGENTGYM_DISABLE_PLUGINS="broken")
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentgym_core.cli.main", "env", "serve", "lightsout", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        line = proc.stdout.readline()
        url = re.search(r"(http://\S+)", line).group(1)
        with httpx.Client(base_url=url, timeout=30) as c:
            assert c.get("/health").status_code == 200
            info = c.get("/info").json()
            assert "Lights Out" in info["instruction"]
            sid = c.post("/create").json()["id"]
            first = c.post("/reset", json={"id": sid, "data_idx": 1003}).json()["observation"]
            assert set(first) <= set("#.\n") and "#" in first
            bad = c.post("/step", json={"id": sid, "action": "jump"}).json()
            assert bad["done"] is False and "Invalid action" in bad["observation"]
            # solve it: the env's presses are recoverable by trying every cell (3x3, <= 2 presses)

            cells = [(r, col) for r in range(3) for col in range(3)]
            for combo in itertools.chain(((c1,) for c1 in cells), itertools.combinations(cells, 2)):
                c.post("/reset", json={"id": sid, "data_idx": 1003})
                for r, col in combo:
                    out = c.post("/step", json={"id": sid, "action": f"press {r} {col}"}).json()
                if out["done"]:
                    break
            assert out["done"] and out["reward"] == 1.0
            assert c.get("/observation", params={"id": sid}).json() == out["observation"]
            assert c.post("/close", json={"id": sid}).status_code == 200
            assert c.post("/step", json={"id": sid, "action": "press 0 0"}).status_code == 404
    finally:
        proc.terminate()
        proc.wait(30)
