"""Pipelines: a run config with ``stages:`` trains stage after stage, each from the previous one's weights.

::

    stages:
      - name: sft                      # a folder of the run directory
        trainer: {name: sft, demos_expert: planner, epochs: 3}
      - name: rl
        trainer: {name: rl, steps: 20}
        scheduler: {name: scaling_inter, rounds: [8, 14, 20], step_interval: 5}

A stage holds its ``name`` and any sections of a run config but ``run``; they are merged onto
the rest of the file (the shared settings: model, env, agent, eval, ...). ``runs/<name>/`` holds
the whole config and ``pipeline.json`` (each stage's status, wall time, hand-off); each stage
is an ordinary run directory ``runs/<name>/<stage>/`` (``agentgym eval --model``, ``report`` and
``view`` work on it). Stage *i + 1* starts from stage *i*'s final checkpoint: full weights as
saved, LoRA adapters merged into a full model first (``<stage>/merged``), so the next stage
trains its own adapters (or all weights) on top. Stages after the first skip the ``before``
evaluation (it is the previous stage's ``after``) unless they set ``eval.before``.
``agentgym train --resume runs/<name>`` continues where the pipeline stopped: a finished stage
is kept, an interrupted one resumes from its latest checkpoint.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from .config import build_component, stage_config, stage_overlays, to_yaml
from .errors import AgentGymError
from .rundir import RunDir

#: The file that marks a pipeline's run directory.
STATE_FILE = "pipeline.json"


def is_pipeline_dir(path: str | Path) -> bool:
    return (Path(path) / STATE_FILE).is_file()


class PipelineState:
    """``pipeline.json``: each stage's status, run directory, final checkpoint, hand-off and wall time."""

    def __init__(self, path: Path, names: list[str]) -> None:
        self.path = path
        data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        old = {s["name"]: s for s in data.get("stages", [])}
        self.stages = [old.get(n, {"name": n, "status": "pending"}) for n in names]

    def get(self, name: str) -> dict[str, Any]:
        return next(s for s in self.stages if s["name"] == name)

    def write(self) -> None:
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        tmp.write_text(json.dumps({"stages": self.stages}, indent=2) + "\n", encoding="utf-8")
        tmp.replace(self.path)


def run_pipeline(cfg: Any, manager: Any, *, resume: str | None = None, echo: Any = print) -> list[dict[str, Any]]:
    """Train every stage of *cfg* in order (see the module docstring); returns the stages' records."""
    overlays = stage_overlays(cfg.stages)
    root = Path(resume) if resume else Path(cfg.run.output_dir) / cfg.run.name
    if not resume:
        _take_dir(root, bool(cfg.run.overwrite))
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.yaml").write_text(to_yaml(cfg), encoding="utf-8")
    state = PipelineState(root / STATE_FILE, [o["name"] for o in overlays])
    state.write()
    model_path: str | None = None
    for i, overlay in enumerate(overlays):
        name = overlay["name"]
        record, folder = state.get(name), root / name
        stage_cfg = stage_config(cfg, overlay, i, run_dir=root, model_path=model_path, manager=manager)
        if record.get("status") == "completed" and record.get("next_model"):
            echo(f"pipeline: stage {i + 1}/{len(overlays)} {name}: already completed ({record['checkpoint']})")
            model_path = record["next_model"]
            continue
        resumable = folder.is_dir() and RunDir(folder).latest_checkpoint() is not None
        if folder.is_dir() and not resumable:  # started, but no checkpoint yet: start it again
            stage_cfg = _with_overwrite(stage_cfg)
        echo(f"pipeline: stage {i + 1}/{len(overlays)} {name} ({stage_cfg.trainer.name}) in {folder}"
             + (" (resuming)" if resumable else "") + (f", from {model_path}" if model_path else ""))
        record.update(status="running", trainer=stage_cfg.trainer.name, run_dir=str(folder))
        state.write()
        started = time.perf_counter()
        trainer = build_component(manager, "trainers", stage_cfg.trainer, stage_cfg, manager,
                                  resume=str(folder) if resumable else None)
        try:
            trainer.fit()
        except KeyboardInterrupt:
            record.update(status="interrupted", wall_s=record.get("wall_s", 0.0) + time.perf_counter() - started)
            state.write()
            print(f"pipeline: interrupted in stage {name}; `agentgym train --resume {root}` continues the pipeline "
                  "from there", file=sys.stderr, flush=True)
            raise
        except BaseException:
            record.update(status="failed", wall_s=record.get("wall_s", 0.0) + time.perf_counter() - started)
            state.write()
            raise
        checkpoint = RunDir(folder).require_checkpoint()
        next_model, handoff = trainer.export_model(checkpoint) if i + 1 < len(overlays) else (str(checkpoint), "final")
        record.update(status="completed", checkpoint=str(checkpoint), next_model=next_model, handoff=handoff,
                      wall_s=round(record.get("wall_s", 0.0) + time.perf_counter() - started, 1),
                      eval={tag: (s or {}).get("overall", {}).get("success_rate") for tag, s in trainer.summary.items()})
        state.write()
        model_path = next_model
    return state.stages


def summary_lines(stages: list[dict[str, Any]], root: str | Path) -> list[str]:
    """What ``agentgym train`` (and ``LLMAgent.train(warm_start=...)``) prints after a pipeline: each stage's
    status, wall time and held-out success, then the run directory."""
    import os

    from .finish import short_path

    lines = []
    for s in stages:
        evals = ", ".join(f"{tag} {100 * v:.1f}%" for tag, v in (s.get("eval") or {}).items() if v is not None)
        lines.append(f"stage {s['name']:>8}: {s.get('status')}, {s.get('wall_s', 0):.0f} s"
                     + (f", held-out success {evals}" if evals else ""))
    run_dir = os.path.abspath(root)
    lines.append(f"run: {run_dir} (agentgym eval --compare {short_path(run_dir)}; each stage is a run directory)")
    return lines


def _take_dir(root: Path, overwrite: bool) -> None:
    import shutil

    if not root.exists() or not any(root.iterdir()):
        return
    if not is_pipeline_dir(root):
        raise AgentGymError(f"{root} already holds something other than a pipeline; pick another run.name or "
                            "run.output_dir")
    if not overwrite:
        raise AgentGymError(f"{root} already holds a pipeline run: continue it with `agentgym train --resume {root}`, "
                            "start a new one with run.name=NEW, or replace it with run.overwrite=true")
    shutil.rmtree(root)
    print(f"run.overwrite=true: deleted the earlier pipeline in {root}", file=sys.stderr, flush=True)


def _with_overwrite(cfg: Any) -> Any:
    from omegaconf import OmegaConf

    data = OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))
    data.run.overwrite = True
    OmegaConf.set_readonly(data, True)
    return data


def stage_dirs(root: str | Path) -> list[tuple[str, Path]]:
    """``(stage name, run directory)`` of a pipeline's stages in order (those that exist)."""
    root = Path(root)
    data = json.loads((root / STATE_FILE).read_text(encoding="utf-8"))
    return [(s["name"], root / s["name"]) for s in data.get("stages", []) if (root / s["name"]).is_dir()]
