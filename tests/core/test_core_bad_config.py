"""Bad configs through the real CLI: each gives one clear line, exit code 1, no traceback."""
import pytest


@pytest.mark.parametrize(
    "yaml_text, overrides, expected",
    [
        ("rollout: {group_size: many}\n", [], "rollout.group_size"),          # wrong type
        ("scheduler: {turns: 3, tunrs: 4}\n", [], "Did you mean 'turns'?"),   # unknown key
        ("scheduler: {name: fixd}\n", [], "Did you mean 'fixed'?"),           # unknown plugin name
        ("rollout: {concurrency: -4}\n", [], "rollout.concurrency must be >= 1"),  # negative size
        ("", ["env.servers=0"], "env.name' is required"),                     # missing name
        ("rollouts: {}\n", [], "Did you mean 'rollout'?"),                    # unknown section
        ("model: [1, 2]\n", [], "must be a mapping"),                          # wrong shape
        ("run: {name: a/b}\n", [], "run.name must be a non-empty folder name"),
    ],
)
def test_bad_config_one_clear_error(run_cli, tmp_path, yaml_text, overrides, expected):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(yaml_text or "{}\n")
    res = run_cli("config", "show", "-c", str(cfg), *overrides, env={"AGENTGYM_LOAD_PLUGINS": ""})
    assert res.returncode == 1, res.stdout
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), res.stderr
    assert expected in lines[0], lines[0]
