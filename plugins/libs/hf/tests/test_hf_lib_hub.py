"""Hub ids in ``model.path`` / ``base_model``: resolved from a Hugging Face cache laid out exactly as
huggingface_hub lays it out (``models--org--name/{blobs,refs,snapshots}``, snapshot files symlinked
to content-addressed blobs), built here from a tiny model; never the network (HF_HUB_OFFLINE=1)."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from agentgym_core.models import ModelNotFoundError  # noqa: E402
from agentgym_hf.convert import resolve_model_path, resolve_tokenizer_path  # noqa: E402
from agentgym_hf.loading import load_model  # noqa: E402

MAIN = "a" * 40
V2 = "b" * 40


def add_snapshot(cache: Path, repo: str, commit: str, source: Path, refs: tuple[str, ...]) -> Path:
    """Put *source*'s files into *cache* as huggingface_hub's downloads do: each file's content in
    ``blobs/<sha256>``, ``snapshots/<commit>/<file>`` a relative symlink to it, ``refs/<name>`` the commit."""
    root = cache / f"models--{repo.replace('/', '--')}"
    snapshot = root / "snapshots" / commit
    for f in sorted(p for p in source.rglob("*") if p.is_file()):
        data = f.read_bytes()
        blob = root / "blobs" / hashlib.sha256(data).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        link = snapshot / f.relative_to(source)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    for ref in refs:
        (root / "refs").mkdir(parents=True, exist_ok=True)
        (root / "refs" / ref).write_text(commit)  # no newline, as huggingface_hub writes it
    return snapshot


@pytest.fixture(scope="module")
def hub_cache(tmp_path_factory, hf_tokenizer):
    from agentgym_hf.loading import tiny_random_model

    root = tmp_path_factory.mktemp("hf")
    cache = root / "hub"
    for commit, seed, refs in ((MAIN, 11, ("main",)), (V2, 12, ("v2",))):
        src = root / f"src-{seed}"
        tiny_random_model(hf_tokenizer, seed=seed).save_pretrained(src)
        hf_tokenizer.save_pretrained(src)
        add_snapshot(cache, "acme/tiny-agent", commit, src, refs)
    return cache


@pytest.fixture
def offline(hub_cache, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(hub_cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return hub_cache


def test_the_cache_is_what_huggingface_hub_itself_reads(hub_cache):
    from huggingface_hub import scan_cache_dir, try_to_load_from_cache

    info = scan_cache_dir(hub_cache)
    assert not info.warnings, info.warnings
    (repo,) = info.repos
    assert repo.repo_id == "acme/tiny-agent" and {r.commit_hash for r in repo.revisions} == {MAIN, V2}
    assert {ref for r in repo.revisions for ref in r.refs} == {"main", "v2"}
    found = try_to_load_from_cache("acme/tiny-agent", "config.json", cache_dir=hub_cache)
    assert found == str(hub_cache / "models--acme--tiny-agent" / "snapshots" / MAIN / "config.json")


def test_hub_id_and_revision_resolve_to_their_snapshot_and_load(offline):
    snapshots = offline / "models--acme--tiny-agent" / "snapshots"
    assert resolve_model_path("acme/tiny-agent") == snapshots / MAIN
    assert resolve_model_path("acme/tiny-agent@v2") == snapshots / V2  # a tag (refs/v2)
    assert resolve_model_path(f"acme/tiny-agent@{V2}") == snapshots / V2  # a commit hash
    assert resolve_tokenizer_path("acme/tiny-agent") == snapshots / MAIN
    main, _ = load_model("acme/tiny-agent", dtype="fp32")
    v2, tok = load_model("acme/tiny-agent@v2", dtype="fp32")
    assert tok.eos_token_id is not None
    weights = [(a, b) for a, b in zip(main.parameters(), v2.parameters())]
    assert not all(torch.equal(a, b) for a, b in weights)  # two revisions, two sets of weights


def test_the_engine_takes_a_hub_id(offline):
    pytest.importorskip("agentgym_engine_hf", reason="the hf engine plugin loads models through this library")
    from agentgym_engine_hf.engine import HFEngine

    from agentgym_core.engine import GenerationRequest, SamplingParams

    engine = HFEngine("acme/tiny-agent", dtype="fp32", threads=1)
    out = engine.generate([GenerationRequest([1, 2, 3], SamplingParams(max_new_tokens=3, temperature=0.0))])[0]
    assert len(out.token_ids) == 3
    engine.close()


def test_a_hub_id_not_in_the_cache_names_what_was_tried(offline):
    with pytest.raises(ModelNotFoundError) as info:
        resolve_model_path("acme/not-there")
    msg = str(info.value)
    assert msg.startswith("model 'acme/not-there' was not found. Cache it once where the Hub is reachable: "
                          "`hf download acme/not-there`, or use the bundled model 'smollm2-135m-instruct'")
    assert "Tried: a bundled alias (smollm2-135m-instruct): no" in msg and "\n" not in msg
    assert str(offline / "models--acme--not-there" / "snapshots") in msg and "refs/main" in msg
    assert "HF_HUB_OFFLINE is set, so nothing was downloaded" in msg and "hf download acme/not-there" in msg
    with pytest.raises(ModelNotFoundError, match=r"`hf download acme/tiny-agent --revision v9`.*refs/v9>"):
        resolve_model_path("acme/tiny-agent@v9")


def test_a_name_without_its_org_is_answered_with_the_hub_ids_it_may_mean(offline, tmp_path):
    """LLMAgent(base_model="Qwen2.5-7B") offline: the first line names the hub id, the cache command and the
    bundled model (it used to end in `hf download Qwen2.5-7B`, which is no hub id)."""
    with pytest.raises(ModelNotFoundError) as info:
        resolve_model_path("Qwen2.5-7B")
    assert str(info.value).startswith(
        "model 'Qwen2.5-7B' was not found. A hub id is org/name: did you mean 'Qwen/Qwen2.5-7B'? Cache it once "
        "where the Hub is reachable: `hf download Qwen/Qwen2.5-7B`, or use the bundled model 'smollm2-135m-instruct' "
        "(model.path=smollm2-135m-instruct, LLMAgent(base_model='smollm2-135m-instruct')).")
    with pytest.raises(ModelNotFoundError, match=r"did you mean 'acme/tiny-agent'\? .*`hf download acme/tiny-agent`"):
        resolve_model_path("TINY-agent")  # a cached repo of that name, in any case
    with pytest.raises(ModelNotFoundError, match=r"A hub id is org/name \(e.g. Qwen/Qwen2.5-0.5B-Instruct\)"):
        resolve_model_path("frobnicator-9b")


def test_paths_that_are_not_hub_ids_keep_the_folder_error(offline, tmp_path):
    with pytest.raises(ModelNotFoundError, match="neither a bundled alias"):
        resolve_model_path(str(tmp_path / "nothing-here"))
