"""The SFT loss: summed negative log-likelihood of the trained tokens, the LM head run on those alone."""
from __future__ import annotations

from typing import Any

import torch

from agentgym_hf.logprobs import token_logprobs

from .data import Batch


def reply_loss(lm: Any, batch: Batch, device: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """``(summed NLL, correctly predicted tokens)`` over the tokens of *batch* with loss mask 1.

    Token *t* is predicted from the hidden state at *t - 1*; the vocabulary projection runs only
    on those positions (a 49k-word vocabulary over every prompt token would dominate the cost),
    in chunks (:func:`agentgym_hf.logprobs.token_logprobs`: no ``[tokens, vocab]`` logits).
    """
    base = lm.get_base_model() if hasattr(lm, "get_base_model") else lm
    ids = batch.input_ids.to(device)
    hidden = base.get_decoder()(input_ids=ids, attention_mask=batch.attention_mask.to(device),
                                position_ids=batch.position_ids.to(device), use_cache=False).last_hidden_state
    sel = batch.loss_mask[:, 1:].to(device) > 0
    scores = token_logprobs(base, hidden[:, :-1][sel], ids[:, 1:][sel], hits=True)
    return -scores.logprobs.sum(), scores.hits.sum()
