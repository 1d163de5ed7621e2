"""``VLLMEngine``: the engine interface on ``vllm.LLM`` (continuous batching, automatic prefix caching).

Prefix caching replaces the hf engine's per-episode KV caches: vLLM finds the shared prefix
of a turn's prompt by itself, so ``cache_key``/``release`` need no bookkeeping here. Logprobs
are requested in ``raw_logprobs`` mode (log-softmax of the unprocessed logits), matching the
contract. Written against vLLM's documented API (>= 0.10); not run in this project's CI.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentgym_core.engine import Engine, GenerationRequest, GenerationResult
from agentgym_core.errors import AgentGymError
from agentgym_hf.convert import resolve_model_path

_DTYPES = {"auto": "auto", "bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


class VLLMUnavailableError(AgentGymError):
    """vllm is not installed (or cannot start: no GPU)."""


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as exc:
        raise VLLMUnavailableError(
            "engine 'vllm' needs the vllm package, which is not installed: from the AgentGym checkout, "
            "pip install -e 'plugins/engines/vllm[vllm]' on a machine with a CUDA GPU, or use engine.name=hf"
        ) from exc
    return vllm


class VLLMEngine(Engine):
    @dataclass
    class Config:
        #: Share of GPU memory vLLM may take for weights and KV cache.
        gpu_memory_utilization: float = 0.5
        tensor_parallel_size: int = 1
        max_batch_size: int = 256
        #: Enforce eager mode (no CUDA graphs): slower, but starts faster and allows weight swaps.
        enforce_eager: bool = False

        def __post_init__(self) -> None:
            from agentgym_core.sections import check_range

            check_range("engine.gpu_memory_utilization", self.gpu_memory_utilization, gt=0, le=1)
            check_range("engine.tensor_parallel_size", self.tensor_parallel_size, ge=1, note="GPUs")
            check_range("engine.max_batch_size", self.max_batch_size, ge=1)

    def __init__(
        self,
        model: Any,
        tokenizer: Any = None,
        *,
        dtype: str = "auto",
        device: str = "cuda",
        gpu_memory_utilization: float = 0.5,
        tensor_parallel_size: int = 1,
        max_batch_size: int = 256,
        enforce_eager: bool = False,
        max_context: int | None = None,
        chat_template: str | None = None,
        seed: int = 0,
        **_: Any,
    ) -> None:
        vllm = _import_vllm()
        self._vllm = vllm
        path = model if isinstance(model, str) else getattr(getattr(model, "config", None), "_name_or_path", None)
        if not path:
            raise ValueError("VLLMEngine needs a model path or alias (it runs its own copy of the weights)")
        folder = str(resolve_model_path(str(path)))
        kwargs: dict[str, Any] = dict(
            model=folder,
            dtype=_DTYPES.get(dtype, dtype),
            enable_prefix_caching=True,
            gpu_memory_utilization=gpu_memory_utilization,
            tensor_parallel_size=tensor_parallel_size,
            enforce_eager=enforce_eager,
            seed=seed,
            logprobs_mode="raw_logprobs",
        )
        if max_context:
            kwargs["max_model_len"] = int(max_context)
        self.llm = vllm.LLM(**kwargs)
        self._tokenizer = tokenizer or self.llm.get_tokenizer()
        if chat_template:
            self._tokenizer.chat_template = chat_template
        self.max_batch_size = max_batch_size

    @property
    def tokenizer(self) -> Any:
        return self._tokenizer

    def generate(self, requests: list[GenerationRequest]) -> list[GenerationResult]:
        if not requests:
            return []
        from vllm.inputs import TokensPrompt

        prompts = [TokensPrompt(prompt_token_ids=list(r.prompt_ids)) for r in requests]
        params = [self._params(r) for r in requests]
        outputs = self.llm.generate(prompts, sampling_params=params, use_tqdm=False)
        results = []
        for req, out in zip(requests, outputs):
            completion = out.outputs[0]
            tokens = list(completion.token_ids)
            logprobs = [float(step[tok].logprob) for step, tok in zip(completion.logprobs or [], tokens)]
            cached = getattr(out, "num_cached_tokens", None) or 0
            results.append(
                GenerationResult(
                    token_ids=tokens,
                    logprobs=logprobs,
                    finish_reason="length" if completion.finish_reason == "length" else "stop",
                    prefill_tokens=len(req.prompt_ids) - int(cached),
                )
            )
        return results

    def _params(self, req: GenerationRequest) -> Any:
        p = req.params
        return self._vllm.SamplingParams(
            temperature=p.temperature,
            top_p=p.top_p if p.temperature > 0 else 1.0,
            max_tokens=p.max_new_tokens,
            stop=list(p.stop_strings) or None,
            stop_token_ids=list(p.stop_token_ids) or None,
            include_stop_str_in_output=True,
            seed=p.seed,
            logprobs=0,  # the sampled token's logprob only
            skip_special_tokens=False,
            detokenize=bool(p.stop_strings),
        )

    def update_weights(self, source: Any) -> None:
        """Copy a model's (or state dict's) weights into vLLM's model in place, then drop cached prefixes."""
        state = source.state_dict() if hasattr(source, "state_dict") else source
        items = [(name, tensor.detach()) for name, tensor in state.items()]

        def load(model: Any) -> None:
            model.load_weights(weights=items)

        if hasattr(self.llm, "apply_model"):
            self.llm.apply_model(load)
        else:  # older vLLM (V0 engine)
            load(self.llm.llm_engine.model_executor.driver_worker.model_runner.model)
        self.llm.reset_prefix_cache()

    def release(self, cache_key: str) -> None:
        """Nothing to do: vLLM's prefix cache evicts by itself."""

    def close(self) -> None:
        self.llm = None
