"""The trained module: a causal LM (optionally LoRA-wrapped) plus an optional value head.

``forward`` returns per-token log-probs, entropies and values only where the loss mask is
1: the LM head runs on those positions alone, which skips the (large-vocabulary) logits of
every prompt and observation token, and in chunks (:func:`agentgym_hf.logprobs.token_logprobs`),
so a long episode never holds ``[tokens, vocab]`` logits. Wrapping this module in DDP
synchronises its gradients.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator, Optional

import torch
from torch import nn

from agentgym_hf.logprobs import token_logprobs
from agentgym_hf.training import apply_lora, engine_copy, plain_state_dict  # noqa: F401  (re-exported)

from .batch import PrefixPlan


class PolicyModule(nn.Module):
    def __init__(self, lm: nn.Module, value_head: bool = False) -> None:
        super().__init__()
        self.lm = lm
        base = self.base_model
        hidden = base.config.get_text_config().hidden_size if hasattr(base.config, "get_text_config") else base.config.hidden_size
        self.value_head = nn.Linear(hidden, 1) if value_head else None
        if self.value_head is not None:
            nn.init.zeros_(self.value_head.weight)
            nn.init.zeros_(self.value_head.bias)

    @property
    def base_model(self) -> nn.Module:
        """The transformers ``*ForCausalLM`` (under the peft wrapper, if any)."""
        return self.lm.get_base_model() if hasattr(self.lm, "get_base_model") else self.lm

    @property
    def is_lora(self) -> bool:
        return hasattr(self.lm, "disable_adapter")

    @contextlib.contextmanager
    def reference(self) -> Iterator[None]:
        """LoRA: the base model with adapters disabled is the reference policy."""
        with self.lm.disable_adapter():
            yield

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        loss_mask: torch.Tensor,
        with_entropy: bool = True,
        plan: Optional[PrefixPlan] = None,
    ) -> dict[str, Any]:
        """Per-token outputs; *plan* (``Batch.prefix_plan``) runs shared prefixes once."""
        base = self.base_model
        hidden = self._hidden(base.get_decoder(), input_ids, attention_mask, plan)
        sel = loss_mask[:, 1:] > 0  # token t (t >= 1) is predicted from position t - 1
        h = hidden[:, :-1][sel]
        scores = token_logprobs(base, h, input_ids[:, 1:][sel], entropy=with_entropy)
        out: dict[str, Any] = {"logprobs": _scatter(scores.logprobs, sel, input_ids.shape)}
        if with_entropy:
            out["entropy"] = _scatter(scores.entropy, sel, input_ids.shape)
        if self.value_head is not None:
            v = self.value_head(h.float()).squeeze(-1)
            out["values"] = _scatter(v, sel, input_ids.shape)
        return out

    def _hidden(self, decoder: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                plan: Optional[PrefixPlan]) -> torch.Tensor:
        """Last hidden states ``[B, L, H]``; positions inside a shared prefix are left at zero
        (no trained position reads them: they reach the rest only through the KV cache)."""
        if plan is None or not plan.shares or _checkpointing(decoder):
            return decoder(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).last_hidden_state
        head = _prefix_kv(decoder, input_ids[:1, : plan.base]) if plan.base else None
        parts, order = [], []
        for rows, p in plan.segments:
            rows = rows.to(input_ids.device)
            ids, mask = input_ids[rows], attention_mask[rows]
            if p == 0:
                parts.append(decoder(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state)
            else:
                parts.append(_shared_prefix_hidden(decoder, ids, mask, p, head, plan.base))
            order.append(rows)
        hidden = torch.cat(parts)
        inverse = torch.empty(len(input_ids), dtype=torch.long, device=input_ids.device)
        rows = torch.cat(order)
        inverse[rows] = torch.arange(len(rows), device=input_ids.device)
        return hidden[inverse]


def enable_checkpointing(lm: nn.Module) -> None:
    """Turn on gradient (activation) checkpointing under the name this transformers uses."""
    if hasattr(lm, "activation_checkpointing_enable"):  # the newer name (transformers 5.2x)
        lm.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    else:
        lm.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})


def _checkpointing(decoder: nn.Module) -> bool:
    """Gradient checkpointing drops the KV cache in training, so a shared prefix cannot be used."""
    return decoder.training and torch.is_grad_enabled() and any(
        getattr(m, "gradient_checkpointing", False) for m in decoder.modules())


def _prefix_kv(decoder: nn.Module, ids: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Run *ids* (batch 1) and return each layer's keys and values."""
    from agentgym_hf.kvcache import layers, out_cache

    return layers(out_cache(decoder(input_ids=ids, use_cache=True)))


def _shared_prefix_hidden(decoder: nn.Module, ids: torch.Tensor, mask: torch.Tensor, p: int,
                          head: Optional[list[tuple[torch.Tensor, torch.Tensor]]], base: int) -> torch.Tensor:
    """Rows that agree on tokens ``[0, p)``: run that prefix once (batch 1; past *head*, the
    keys/values of tokens ``[0, base)`` every row shares, when given), repeat its KV cache for
    every row, then run each row's remaining tokens against it. Gradients flow into the prefix
    through the cache, so the result equals the full pass (to float rounding)."""
    from agentgym_hf.kvcache import cache_arg, out_cache
    from transformers import DynamicCache

    n, width = ids.shape
    name = cache_arg(decoder)
    if head is not None:
        cache = DynamicCache(ddp_cache_data=head)  # a new cache over the shared tensors (never written in place)
        if p > base:
            positions = torch.arange(base, p, device=ids.device)[None]
            decoder(input_ids=ids[:1, base:p], position_ids=positions, use_cache=True, **{name: cache})
    else:
        cache = out_cache(decoder(input_ids=ids[:1, :p], use_cache=True))
    cache.batch_repeat_interleave(n)
    positions = torch.arange(p, width, device=ids.device).expand(n, -1)
    tail = decoder(input_ids=ids[:, p:], attention_mask=mask, position_ids=positions, use_cache=True,
                   **{name: cache}).last_hidden_state
    return torch.cat([tail.new_zeros(n, p, tail.shape[-1]), tail], dim=1)


def _scatter(values: torch.Tensor, sel: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    full = values.new_zeros(shape)
    inner = values.new_zeros(sel.shape)
    inner = inner.masked_scatter(sel, values)
    return torch.cat([full[:, :1], inner], dim=1)


def load_lm(path: str, *, dtype: str = "fp32", chat_template: str | None = None) -> tuple[nn.Module, Any]:
    """Load the policy LM (on the CPU; the trainer moves it) and its tokenizer: a local Hugging
    Face folder, a bundled alias, or a LoRA checkpoint (merged)."""
    from agentgym_hf.loading import load_model

    return load_model(path, dtype=dtype, device="cpu", chat_template=chat_template)



def frozen_copy(lm: nn.Module) -> nn.Module:
    """A frozen copy of *lm* (the reference policy for full fine-tuning)."""
    import copy

    ref = copy.deepcopy(lm)
    ref.requires_grad_(False)
    ref.eval()
    return ref
