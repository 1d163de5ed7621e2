"""The ``sft`` trainer: supervised fine-tuning on conversations, the warm start before RL.

The loss is the mean negative log-likelihood of the agent's reply tokens (and the end-of-turn
marker it must write), tokenised exactly as a rollout holds them (:mod:`.data`); prompts,
instructions and observations are context only. The lifecycle (run directory, before/after
held-out evaluations, checkpoints, Ctrl-C, resume, hooks) is core's
:class:`~agentgym_core.trainer.Trainer`, the same as ``rl``'s, and a checkpoint is the same
kind of Hugging Face folder, so ``agentgym eval --model``, ``report`` and a following ``rl``
stage read it as they read ``rl``'s.
"""
from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import torch

from agentgym_core import ConfigError, StepResult, TaskCursor, Trainer, phase
from agentgym_core.profiling import profiling

from .config import SFTConfig
from .data import Encoded, collate, encode_all
from .loss import reply_loss


class SFTTrainer(Trainer):
    Config = SFTConfig

    def __init__(self, config: Any, manager: Any, *, resume: Any = None, **options: Any) -> None:
        super().__init__(config, manager, resume=resume, **options)
        self._encoded: Encoded | None = None
        self._conversations: list[dict[str, Any]] = []
        self._recorded: Path | None = None

    # -- setup -------------------------------------------------------------------------------
    def init_processes(self) -> None:
        from agentgym_core import resolve_backend

        if int(os.environ.get("WORLD_SIZE", "1")) > 1:
            raise ConfigError("trainer.name=sft trains in one process: drop --num-processes (a 135M-1B model's warm "
                              "start takes minutes), or run the rl stage with several")
        self.backend = resolve_backend(self.manager, self.config.backend)
        self.backend.setup()
        self.device = self.backend.device(0)

    def check_settings(self) -> None:
        cfg = self.config
        if "env" not in cfg and (cfg.eval.before or cfg.eval.after):
            raise ConfigError("the before/after evaluations play the env of the config, which has no env section: add "
                              "env: {name: ...}, or train without them (eval.before=false eval.after=false)")

    def total_steps(self) -> int:
        s = self.settings
        if s.steps:
            return int(s.steps)
        per_step = s.batch_size * s.grad_accum
        return max(1, math.ceil(s.epochs * len(self.data().rows) / per_step))

    def data(self) -> Encoded:
        """The training rows (read and tokenised once)."""
        if self._encoded is None:
            from agentgym_core import ChatFormat, read_conversations
            from agentgym_hf.loading import load_tokenizer

            s = self.settings
            self.tokenizer = load_tokenizer(self.config.model.path, chat_template=self.config.model.chat_template)
            self._conversations = read_conversations(self.data_path())
            chat = ChatFormat(self.tokenizer, self.config.model.chat_template)
            self._encoded = encode_all(self._conversations, chat, max_length=s.max_length, packing=s.packing)
            self._describe_data(self._encoded)
        return self._encoded

    def data_path(self) -> Path:
        """``trainer.data``, or the demonstrations ``trainer.demos_expert`` records into the run directory
        (once: a resumed run reads them back)."""
        s = self.settings
        if s.data:
            return Path(s.data)
        path = self.run_dir.path / "demos.jsonl"
        if path == self._recorded:
            return path
        if self.main and not path.is_file():
            from agentgym_core import record_demos

            if "env" not in self.config:
                raise ConfigError("trainer.demos_expert plays the config's env, which has no env section")
            record_demos(self.config, self.manager, path, expert=s.demos_expert, episodes=s.demos_episodes)
        self.barrier()
        self._recorded = path
        return path

    def _describe_data(self, enc: Encoded) -> None:
        if not self.main:
            return
        tokens = sum(sum(p.mask) for r in enc.rows for p in r.parts)
        print(f"sft data: {enc.conversations} conversations from {self.data_path()}, {len(enc.rows)} rows"
              f"{' (packed)' if self.settings.packing else ''}, {tokens} trained tokens", file=sys.stderr, flush=True)
        if enc.truncated:
            print(f"sft data: {enc.truncated} conversations are longer than trainer.max_length="
                  f"{self.settings.max_length} tokens and were cut ({enc.dropped_tokens} reply tokens not trained); "
                  "raise trainer.max_length to train on all of them", file=sys.stderr, flush=True)
        if enc.skipped:
            print(f"sft data: {enc.skipped} conversations have no reply within trainer.max_length and were left out",
                  file=sys.stderr, flush=True)
        if not enc.rows:
            raise ConfigError(f"trainer data {str(self.data_path())!r} has no conversation with a reply to train on")

    def build(self) -> None:
        from agentgym_hf.loading import load_model
        from agentgym_hf.training import (enable_checkpointing, engine_copy, make_optimizer, warmup_schedule,
                                          with_adapters)

        cfg, s = self.config, self.settings
        torch.manual_seed(cfg.run.seed)
        enc = self.data()
        full_resume = self.checkpoint is not None and s.finetune == "full"
        lm, self.tokenizer = load_model(str(self.checkpoint) if full_resume else cfg.model.path, dtype="fp32",
                                        device=self.device, chat_template=cfg.model.chat_template)
        self.bf16 = cfg.model.dtype in ("auto", "bf16") and self.backend.supports_bf16()
        if s.gradient_checkpointing:
            enable_checkpointing(lm)
        if s.finetune == "lora":
            lm = with_adapters(lm, s, self.checkpoint)
        lm.train()
        self.lm = lm
        self.params = [p for p in lm.parameters() if p.requires_grad]
        self.optimizer = make_optimizer(self.params, s, self.device)
        self.lr_sched = warmup_schedule(self.optimizer, s.warmup_steps)
        self.cursor = TaskCursor(list(range(len(enc.rows))), int(cfg.run.seed), what=f"trainer data {self.data_path()}")
        self.engine_copy = False
        if "env" in cfg:
            from agentgym_core import check_not_held_out

            self.assemble_parts()
            check_not_held_out(self._conversations, self.parts.env, cfg.eval.split)
            self._check_demo_settings()
            #: bf16 evaluation from a copy of the fp32 master weights (the live model would decode in fp32;
            #: a LoRA model's bf16 base would not run outside autocast), refreshed before each evaluation.
            self.engine_copy = self.bf16 and cfg.engine.name == "hf"
            if self.engine_copy:
                self.parts.load_engine(engine_copy(self.lm, torch.bfloat16), self.tokenizer, own_weights=True)
            else:
                self.parts.load_engine(self.lm, self.tokenizer)

    def _check_demo_settings(self) -> None:
        """Say when the demonstrations were written for other agent settings than this run's."""
        import json

        from agentgym_core import meta_path

        path = meta_path(self.data_path())
        if not path.is_file() or not self.main:
            return
        meta = json.loads(path.read_text(encoding="utf-8"))
        agent = self.parts.agent
        mine = {"env": self.config.env.name, "action_format": self.parts.action_format,
                "instruction_position": agent.instruction_position, "system_prompt": agent.system_prompt}
        theirs = {"env": meta.get("env"), "action_format": meta.get("action_format"),
                  **{k: (meta.get("agent") or {}).get(k) for k in ("instruction_position", "system_prompt")}}
        differ = [f"{k}: {theirs[k]!r} there, {mine[k]!r} here" for k in mine if theirs[k] != mine[k]]
        if differ:
            print(f"warning: the demonstrations in {self.data_path()} were recorded for other settings than this run "
                  f"({'; '.join(differ)}), so the warm-started model learns prompts the RL agent will not show it. "
                  f"Record them with this config: agentgym demos -c <this config> --out ...", file=sys.stderr, flush=True)

    # -- the step ----------------------------------------------------------------------------
    def train_step(self, step: int) -> StepResult:
        s, enc = self.settings, self.data()
        t0 = time.perf_counter()
        rows = [enc.rows[i] for i in self.cursor.take(s.batch_size * s.grad_accum)]
        pad = self.tokenizer.pad_token_id or 0
        parts = [rows[i:i + s.batch_size] for i in range(0, len(rows), s.batch_size)]
        micro = [collate(part, pad) for part in parts]
        total = max(1, sum(b.tokens for b in micro))
        self.optimizer.zero_grad(set_to_none=True)
        loss_sum = correct = 0.0
        for part, batch in zip(parts, micro):
            work = _work(part, batch) if profiling() else {}
            with self._autocast(), phase("update forward", **work):
                nll, right = reply_loss(self.lm, batch, self.device)
            with phase("backward", **work):
                (nll / total).backward()
            loss_sum += float(nll.detach())
            correct += float(right)
        with phase("optimizer"):
            grad_norm = float(torch.nn.utils.clip_grad_norm_(self.params, s.max_grad_norm))
            updated = math.isfinite(loss_sum) and math.isfinite(grad_norm)
            if updated:
                self.optimizer.step()
            else:
                self.optimizer.zero_grad(set_to_none=True)
        self.lr_sched.step()
        elapsed = time.perf_counter() - t0
        width = sum(b.input_ids.numel() for b in micro)
        metrics = {
            "step": step + 1, "loss": loss_sum / total, "token_accuracy": correct / total, "tokens": float(total),
            "conversations": float(sum(len(r.parts) for r in rows)), "rows": float(len(rows)),
            "lr": self.lr_sched.get_last_lr()[0], "grad_norm": grad_norm,
            "epoch": self.cursor.epoch + self.cursor.index / len(enc.rows), "nonfinite_skipped": float(not updated),
            "step_time_s": elapsed, "tokens_per_s": width / max(elapsed, 1e-9),
        }
        return StepResult(metrics, updated=updated)

    def _autocast(self) -> Any:
        if not self.bf16:
            return contextlib.nullcontext()
        return torch.autocast(device_type=torch.device(self.device).type, dtype=torch.bfloat16)

    def postfix(self, m: dict[str, float]) -> str:
        return f"loss={m['loss']:.4f} acc={m['token_accuracy']:.3f} epoch={m['epoch']:.2f} lr={m['lr']:.2e}"

    def export_model(self, checkpoint: Path) -> tuple[str, str]:
        from agentgym_hf.training import export_checkpoint

        return export_checkpoint(checkpoint)  # LoRA adapters merged for the next stage of a pipeline

    @contextlib.contextmanager
    def inference(self) -> Iterator[None]:
        self.lm.eval()
        if self.engine_copy:  # the engine's bf16 copy gets the weights trained so far
            from agentgym_hf.training import plain_state_dict

            self.parts.engine.update_weights(plain_state_dict(self.lm, adapted_only=self.settings.finetune == "lora"))
        else:
            self.parts.engine.update_weights(self.lm)  # the engine runs the live model: drop what it cached
        try:
            yield
        finally:
            self.lm.train()

    # -- checkpoints ---------------------------------------------------------------------------
    def save(self, step: int, last: dict[str, float], nonfinite: int) -> Path:
        from agentgym_hf.training import rng_state, write_checkpoint

        enc = self.data()
        state = {
            "step": step + 1, "trainer": "sft", "finetune": self.settings.finetune, "nonfinite": nonfinite,
            "metrics": last, "cursor": self.cursor.state_dict(), "lr_scheduler": self.lr_sched.state_dict(),
            "rng": [rng_state()], "optimizer": self.optimizer.state_dict(),
            "data": {"path": str(self.data_path()), "conversations": enc.conversations, "rows": len(enc.rows),
                     "fingerprint": enc.fingerprint},
        }
        return self.run_dir.save_checkpoint(
            step + 1, lambda folder: write_checkpoint(folder, self.lm, self.tokenizer, state),
            self.settings.keep_checkpoints)

    def restore(self, checkpoint: Path) -> dict[str, Any]:
        from agentgym_hf.training import load_trainer_state, set_rng_state

        state = load_trainer_state(checkpoint / "trainer_state.pt")
        saved = (state.get("data") or {}).get("fingerprint")
        if saved and saved != self.data().fingerprint and self.main:
            print(f"warning: trainer data {self.data_path()} is not the data checkpoint {checkpoint.name} was trained "
                  "on (its tokens differ); training continues on the new data from the saved position",
                  file=sys.stderr, flush=True)
        self.optimizer.load_state_dict(state["optimizer"])
        self.lr_sched.load_state_dict(state["lr_scheduler"])
        self.cursor.load_state_dict(state["cursor"])
        set_rng_state(state["rng"][0])
        return state


def _work(rows: list, batch: Any) -> dict[str, float]:
    """What one forward over *rows* computes (:mod:`agentgym_core.profiling`): tokens, causal query-key
    pairs (each packed conversation attends only within itself) and LM-head positions (the replies)."""
    lengths = [len(part.ids) for row in rows for part in row.parts]
    return {"tokens": float(sum(lengths)), "attended": sum(k * (k + 1) / 2 for k in lengths),
            "head": float((batch.loss_mask[:, 1:] > 0).sum())}
