"""``agentgym serve-policy`` as a user runs it: a process serving a model, an OpenAI client, traces on disk."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import httpx
import pytest

openai = pytest.importorskip("openai")
pytestmark = pytest.mark.slow  # a process loading torch and a model: seconds on a quiet machine, minutes on a busy one
pytest.importorskip("agentgym_engine_hf")


def test_serve_policy_records_each_episode(tmp_path):
    from agentgym_hf.testing import tiny_model_dir

    traces = tmp_path / "traces.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentgym_core.cli.main", "serve-policy", "--model", str(tiny_model_dir(tmp_path)),
         "--port", "0", "--traces", str(traces), "--max-tokens", "5", "model.dtype=fp32"],
        env=dict(os.environ, AGENTGYM_POLICY_KEY="k3y", OMP_NUM_THREADS="1"), stderr=subprocess.PIPE, text=True)
    try:
        url = None
        for line in proc.stderr:
            found = re.search(r"serving .* at (http://\S+)/v1", line)
            if found:
                url = found.group(1)
                break
        assert url, f"no 'serving ... at URL' line; exit status {proc.poll()}"
        for name in ("a", "b"):
            api = openai.OpenAI(base_url=f"{url}/v1", api_key=f"k3y:{name}", max_retries=0, timeout=120)
            messages = [{"role": "user", "content": f"Hello from {name}."}]
            reply = api.chat.completions.create(model="agentgym-policy", messages=messages)
            messages += [{"role": "assistant", "content": reply.choices[0].message.content},
                         {"role": "user", "content": "And then?"}]
            api.chat.completions.create(model="agentgym-policy", messages=messages)
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=f"{url}/v1", api_key="nope", max_retries=0).models.list()
        done = httpx.post(f"{url}/agentgym/episode/finish", json={"reward": 1.0}, timeout=60,
                          headers={"authorization": "Bearer k3y:a"}).json()
        assert (done["episode"], done["calls"], done["segments"], done["prefix_breaks"]) == ("a", 2, 1, 0)
        proc.send_signal(signal.SIGINT)  # episode b is still open: written when the server stops
        rest = proc.communicate(timeout=60)[1]
        assert proc.returncode == 0, rest
    finally:
        if proc.poll() is None:
            proc.kill()
    episodes = [json.loads(line) for line in traces.read_text().splitlines()]
    assert [(e["episode_id"], e["success"], len(e["turns"])) for e in episodes] == [("a", True, 2), ("b", False, 2)]
    for e in episodes:  # prompts extended each other: one sequence, the replies as sampled
        assert all("context" not in t for t in e["turns"])
        assert e["transcript"][0]["content"] == f"Hello from {e['episode_id']}."
