"""Load a causal LM and its tokenizer from a local folder or a bundled alias; build tiny test models.

Shared by the hf engine and the rl trainer (and anything else that runs transformers models),
so all of them see the same weights, dtype and chat template.
"""
from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from agentgym_core.backend import cpu_supports_bf16
from agentgym_core.models import ModelNotFoundError

from .convert import quiet_loading, resolve_model_path, resolve_tokenizer_path

_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


@contextlib.contextmanager
def peft_quiet() -> Iterator[None]:
    """peft asks transformers ``is_gradient_checkpointing``, which newer transformers deprecates
    with a FutureWarning on every LoRA model: not the user's concern, so not shown."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*is_gradient_checkpointing.*", category=FutureWarning)
        yield


def resolve_dtype(dtype: str | torch.dtype, device: str | torch.device = "cpu") -> torch.dtype:
    """``auto`` -> bf16 where the device runs it natively, else fp32; names -> torch dtypes."""
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype == "auto":
        kind = torch.device(device).type
        if kind == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        if kind == "cpu":
            return torch.bfloat16 if cpu_supports_bf16() else torch.float32
        return torch.bfloat16
    try:
        return _DTYPES[dtype]
    except KeyError:
        raise ValueError(f"dtype must be auto, bf16, fp16 or fp32, got {dtype!r}") from None


def load_tokenizer(path_or_alias: str, *, chat_template: str | None = None) -> Any:
    """The tokenizer of a model folder or alias (an alias converts only its tokenizer: fast)."""
    tokenizer = AutoTokenizer.from_pretrained(str(resolve_tokenizer_path(path_or_alias)))
    return prepare_tokenizer(tokenizer, chat_template)


def prepare_tokenizer(tokenizer: Any, chat_template: str | None = None) -> Any:
    """Set the chat template override and a pad token (the EOS when the model has none)."""
    if chat_template:
        tokenizer.chat_template = chat_template
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def contiguous_lm_head(model: Any) -> Any:
    """Hand the LM head contiguous hidden states (a forward pre-hook; once per head; returns *model*).

    Generation asks transformers for the last position's logits only (``logits_to_keep``), a strided
    slice of the hidden states. On a CPU, a bf16 ``linear`` on such a slice goes through ``bmm`` with a
    copy of the whole vocabulary matrix (49,152 x 576 for SmolLM2-135M): 219 ms a call against 10 ms
    for the same slice made contiguous, measured on an AVX512-BF16 EPYC, paid by every prompt's
    prefill (fp32 does not take that path: 12 ms). Copying the slice costs ``batch x hidden`` values.
    """
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if head is not None and not getattr(head, "_agentgym_contiguous", False):
        head.register_forward_pre_hook(_packed_input)
        head._agentgym_contiguous = True
    return model


def packed_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The strides of a freshly allocated tensor of *shape* (row-major, size-1 dimensions included)."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def _packed_input(_module: Any, args: tuple) -> tuple | None:
    # ``Tensor.contiguous()`` is no help: a [B, 1, H] slice of [B, T, H] counts as contiguous (its
    # size-1 dimension's stride is ignored) yet the bf16 kernel still takes the copying path.
    x = args[0] if args else None
    if not isinstance(x, torch.Tensor) or x.stride() == packed_strides(tuple(x.shape)):
        return None
    return (torch.empty(x.shape, dtype=x.dtype, device=x.device).copy_(x), *args[1:])


def load_model(
    path_or_alias: str,
    *,
    dtype: str | torch.dtype = "auto",
    device: str | torch.device = "cpu",
    chat_template: str | None = None,
) -> tuple[Any, Any]:
    """Return ``(model, tokenizer)``; the model is in eval mode on *device*.

    A LoRA checkpoint folder (``adapter_config.json``, no ``config.json``) loads its base
    model (``base_model_name_or_path``: a folder or a bundled alias) with the adapters merged.
    """
    torch_dtype = resolve_dtype(dtype, device)
    adapter = Path(str(path_or_alias))
    if (adapter / "adapter_config.json").is_file() and not (adapter / "config.json").is_file():
        return _load_adapter_checkpoint(adapter, torch_dtype, device, chat_template)
    folder = resolve_model_path(path_or_alias)
    with quiet_loading():  # no "Loading weights" bar between the lines of a run
        model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch_dtype)
    model.to(device)
    model.eval()
    tokenizer = prepare_tokenizer(AutoTokenizer.from_pretrained(str(folder)), chat_template)
    return model, tokenizer


def _load_adapter_checkpoint(folder: Path, torch_dtype: Any, device: Any, chat_template: str | None) -> tuple[Any, Any]:
    import json

    try:
        from peft import PeftModel
    except ImportError as exc:
        raise ModelNotFoundError(f"{str(folder)!r} is a LoRA checkpoint; loading it needs peft: pip install peft") from exc

    base_name = json.loads((folder / "adapter_config.json").read_text()).get("base_model_name_or_path")
    if not base_name:
        raise ModelNotFoundError(f"LoRA checkpoint {str(folder)!r} does not name its base model "
                                 "(base_model_name_or_path in adapter_config.json)")
    with quiet_loading():
        base = AutoModelForCausalLM.from_pretrained(str(resolve_model_path(base_name)), dtype=torch_dtype)
    with peft_quiet():
        model = PeftModel.from_pretrained(base, str(folder)).merge_and_unload()
    model.to(device)
    model.eval()
    tok_dir = folder if (folder / "tokenizer_config.json").is_file() else resolve_model_path(base_name)
    tokenizer = prepare_tokenizer(AutoTokenizer.from_pretrained(str(tok_dir)), chat_template)
    return model, tokenizer


def tiny_random_model(tokenizer: Any, *, seed: int = 0, **config: Any) -> Any:
    """A tiny randomly initialised ``LlamaForCausalLM`` over *tokenizer*'s vocabulary (for tests)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    options = dict(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    options.update(config)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(LlamaConfig(**options))
    model.eval()
    return model
