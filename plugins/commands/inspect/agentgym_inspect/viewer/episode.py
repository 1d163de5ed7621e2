"""One episode laid out turn by turn for the viewer: token pieces with their loss mask.

Token ids are decoded with the run's own tokenizer (``tokenizer.json`` of a checkpoint, read
with the light ``tokenizers`` package, no torch); without one the view falls back to the
stored turn texts and observations and says so.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any


class TokenDecoder:
    """Decodes single token ids to display pieces (cached; special tokens kept)."""

    def __init__(self, tokenizer_json: Path) -> None:
        from tokenizers import Tokenizer

        self._tok = Tokenizer.from_file(str(tokenizer_json))
        self.source = str(tokenizer_json)
        self.piece = lru_cache(maxsize=65536)(self._piece)

    def _piece(self, token_id: int) -> str:
        try:
            text = self._tok.decode([token_id], skip_special_tokens=False)
        except Exception:
            return f"<{token_id}>"
        return text if text else (self._tok.id_to_token(token_id) or f"<{token_id}>")


def load_decoder(folder: Path | None) -> TokenDecoder | None:
    """A decoder for *folder*'s ``tokenizer.json``, or None (no folder, no file, no package)."""
    if folder is None or not (folder / "tokenizer.json").is_file():
        return None
    try:
        return TokenDecoder(folder / "tokenizer.json")
    except Exception:
        return None


def _tokens(data: dict[str, Any], start: int, end: int, decoder: TokenDecoder | None) -> list[list[Any]] | None:
    """``[[piece, mask], ...]`` for ``token_ids[start:end]``; None without a decoder."""
    if decoder is None:
        return None
    ids = data.get("token_ids") or []
    mask = data.get("loss_mask") or []
    return [[decoder.piece(int(ids[i])), int(mask[i]) if i < len(mask) else 0] for i in range(start, min(end, len(ids)))]


def context_label(data: dict[str, Any], k: int) -> str:
    """What the model saw for turn *k*'s reply, in words: ``the whole episode`` or e.g.
    ``prompt + turn 1 + turns 27-29 (412 tokens)`` (from ``Turn.context``, a context policy's spans)."""
    turns = data.get("turns") or []
    turn = turns[k]
    context = turn.get("context")
    if not context:
        return "the whole episode"
    starts = [int(t.get("start", 0)) for t in turns]
    parts = []
    for a, b in context:
        if a < int(data.get("prompt_len", 0) or 0) or not starts or a < starts[0]:
            parts.append("prompt")
            a = starts[0] if starts else b
        inside = [i + 1 for i, s in enumerate(starts) if a <= s < b]
        if inside:
            parts.append(f"turn {inside[0]}" if len(inside) == 1 else f"turns {inside[0]}-{inside[-1]}")
    size = sum(int(b) - int(a) for a, b in context)
    return f"{' + '.join(parts)} ({size} tokens)"


def judge_verdict(data: dict[str, Any]) -> dict[str, Any] | None:
    """The model judge's verdict on the episode: ``info["judge"]`` of its last turn that has one (the judge
    reward writes it there: ``raw`` answer, ``score``, ``reward``, ``reason``, ``parsed``, ``cached``, ...;
    ``gated``/``skipped`` when it was not judged), or None."""
    for turn in reversed(data.get("turns") or []):
        verdict = (turn.get("info") or {}).get("judge")
        if isinstance(verdict, dict):
            return verdict
    return None


def episode_view(data: dict[str, Any], decoder: TokenDecoder | None) -> dict[str, Any]:
    """The JSON the episode page renders: header, the judge's verdict if a judge scored it, prompt block,
    then one block per turn.

    Each turn has the model's tokens (its ``[start, end)`` span) and the environment's tokens
    that follow, up to the next turn; every token carries its loss-mask bit, so a mask that
    disagrees with the spans shows up on screen.
    """
    ids = data.get("token_ids") or []
    mask = data.get("loss_mask") or []
    turns = data.get("turns") or []
    rewards = data.get("rewards") or []
    prompt_end = turns[0]["start"] if turns else len(ids)
    prompt_len = int(data.get("prompt_len", prompt_end) or 0)
    out_turns = []
    for k, turn in enumerate(turns):
        start, end = int(turn.get("start", 0)), int(turn.get("end", 0))
        env_end = int(turns[k + 1]["start"]) if k + 1 < len(turns) else len(ids)
        out_turns.append({
            "turn": k + 1,
            "start": start,
            "end": end,
            "text": turn.get("text", ""),
            "action": turn.get("action"),
            "parse_error": turn.get("parse_error"),
            "finish_reason": turn.get("finish_reason") or "",
            "version": turn.get("version"),  # the weights version that sampled it (asynchronous training)
            "observation": turn.get("observation", ""),
            "env_reward": turn.get("env_reward", 0.0),
            "reward": rewards[k] if k < len(rewards) else None,
            "done": bool(turn.get("done", False)),
            "info": turn.get("info") or {},
            "model_tokens": _tokens(data, start, end, decoder),
            "env_tokens": _tokens(data, end, env_end, decoder),
            "context": context_label(data, k),
            "model_token_count": max(0, end - start),
            "env_token_count": max(0, env_end - end),
        })
    return {
        "episode_id": data.get("episode_id"),
        "env_name": data.get("env_name"),
        "task_id": data.get("task_id"),
        "group_id": data.get("group_id"),
        "step": data.get("step"),
        "success": bool(data.get("success", False)),
        "score": data.get("score", 0.0),
        "reward": sum(rewards) if rewards else None,
        "end_reason": data.get("end_reason"),
        "max_turns": data.get("max_turns"),
        "num_turns": len(turns),
        "failed": bool(data.get("failed", False)),
        "error": data.get("error"),
        "template_fallback": bool(data.get("template_fallback", False)),
        "tokens": len(ids),
        "generated": int(sum(mask)),
        "prompt_len": prompt_len,
        "prompt_tokens": _tokens(data, 0, prompt_end, decoder),
        "turns": out_turns,
        "judge": judge_verdict(data),
        "decoded": decoder is not None,
    }


def matches(data: dict[str, Any], query: str) -> bool:
    """Case-insensitive search over the episode's id, task, turn texts, actions and observations."""
    q = query.lower()
    fields = [str(data.get("episode_id", "")), str(data.get("task_id", "")), str(data.get("error") or "")]
    for t in data.get("turns") or []:
        fields += [t.get("text") or "", t.get("action") or "", t.get("observation") or "", t.get("parse_error") or ""]
    return any(q in f.lower() for f in fields)
