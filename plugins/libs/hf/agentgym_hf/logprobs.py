"""Log-probabilities of chosen tokens from a causal LM's hidden states, with the LM head run in chunks.

The rl update and the sft loss read log-probs only where the loss mask is 1 (the agent's replies).
So they run the decoder on every position, but the vocabulary projection (49,152 columns for
SmolLM2) and the log-softmax only on those positions, :data:`CHUNK` of them at a time. While
gradients are recorded, each chunk is checkpointed: its logits are computed again in the backward
pass, and no ``[positions, vocab]`` tensor outlives one chunk, in the forward or the backward pass.
A single chunk runs as one plain pass, with nothing computed twice.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import torch
from torch import nn

#: Most positions per LM-head pass. One chunk's fp32 logits over SmolLM2's vocabulary are 192 MiB.
CHUNK = 1024

#: ``config.logits_scaling`` by model family: Granite divides the logits by it, and MiniCPM3 divides
#: the hidden states (the same thing, since its LM head has no bias). HyperCLOVA X multiplies.
_LOGITS_SCALING = {"granite": "divide", "minicpm3": "divide", "hyperclovax": "multiply"}


class TokenScores(NamedTuple):
    """What :func:`token_logprobs` returns, one entry per position."""

    logprobs: torch.Tensor  # [N] fp32: log p(target)
    entropy: Optional[torch.Tensor]  # [N] fp32: the entropy of the distribution (entropy=True)
    hits: Optional[torch.Tensor]  # [N] bool: the target is the most likely token (hits=True)


def lm_logits(lm: nn.Module, hidden: torch.Tensor) -> torch.Tensor:
    """fp32 logits of the transformers ``*ForCausalLM`` *lm* (the model under a peft wrapper) for
    *hidden*, computed as its own forward computes them. First the output embedding (tied or not,
    LoRA-adapted if adapters wrap it), then the logit scale (Cohere), ``logits_scaling`` (Granite,
    MiniCPM3, HyperCLOVA X) or final softcap (Gemma 2 and later) that its class applies."""
    logits = lm.get_output_embeddings()(hidden).float()
    config = lm.config.get_text_config() if hasattr(lm.config, "get_text_config") else lm.config
    scale = getattr(lm, "logit_scale", None)
    if isinstance(scale, (int, float)) and scale != 1:
        logits = logits * scale
    scaling = getattr(config, "logits_scaling", None)
    if scaling is not None and scaling != 1:
        kind = next((v for k, v in _LOGITS_SCALING.items() if str(config.model_type).startswith(k)), None)
        if kind is None:
            raise ValueError(f"{type(lm).__name__} scales its logits by config.logits_scaling={scaling} in a way "
                             f"agentgym_hf.logprobs does not know; add model type {config.model_type!r} to "
                             "_LOGITS_SCALING there")
        logits = logits / scaling if kind == "divide" else logits * scaling
    cap = getattr(config, "final_logit_softcapping", None)
    if cap:
        logits = torch.tanh(logits / cap) * cap
    return logits


def token_logprobs(lm: nn.Module, hidden: torch.Tensor, targets: torch.Tensor, *, entropy: bool = False,
                   hits: bool = False, chunk: Optional[int] = None) -> TokenScores:
    """``log p(targets[i] | hidden[i])`` under *lm*'s head for hidden states ``[N, H]`` and token ids ``[N]``.
    If asked, also each distribution's entropy and whether the target is its argmax. The head runs on at
    most *chunk* positions at a time (default :data:`CHUNK`); see the module docstring."""
    size = max(1, chunk or CHUNK)
    n = hidden.shape[0]
    recompute = torch.is_grad_enabled() and n > size
    parts = []
    for start in range(0, max(n, 1), size):  # (one empty pass when n == 0)
        args = (lm, hidden[start:start + size], targets[start:start + size], entropy, hits)
        if recompute:
            from torch.utils.checkpoint import checkpoint

            parts.append(checkpoint(_score, *args, use_reentrant=False))
        else:
            parts.append(_score(*args))
    if len(parts) == 1:
        return TokenScores(*parts[0])
    return TokenScores(*(None if p[0] is None else torch.cat(p) for p in zip(*parts)))


def _score(lm: nn.Module, hidden: torch.Tensor, targets: torch.Tensor, entropy: bool,
           hits: bool) -> tuple[torch.Tensor, Optional[torch.Tensor], Optional[torch.Tensor]]:
    logits = lm_logits(lm, hidden)
    logp_all = torch.log_softmax(logits, dim=-1)
    logp = logp_all.gather(-1, targets[:, None]).squeeze(-1)
    ent = -(logp_all.exp() * logp_all).sum(-1) if entropy else None
    hit = (logits.argmax(dim=-1) == targets) if hits else None
    return logp, ent, hit
