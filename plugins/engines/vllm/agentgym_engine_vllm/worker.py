"""Runs inside vLLM's workers: loads the trainer's weights into the model a worker serves.

vLLM mixes :class:`WeightSyncExtension` into its worker class (``LLM(worker_extension_cls=...)``)
and the engine calls it on every worker with ``LLM.collective_rpc``; each tensor-parallel
rank cuts its own shard from the full tensors. Loading goes through vLLM's in-place reload
(``model_runner.reload_weights``), which re-runs each layer's weight processing after the
copy (on a CPU, vLLM repacks linear weights for oneDNN at load time: copying into the
parameters alone would leave the kernels on the old weights).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from .compat import WeightSyncError, api_error, require

#: What the engine passes as ``worker_extension_cls``.
QUALNAME = "agentgym_engine_vllm.worker.WeightSyncExtension"


class WeightSyncExtension:
    def agentgym_load_weights(self, source: Any) -> int:
        """Load *source* (``[(name, tensor), ...]`` or a safetensors file path) under the model's
        checkpoint names; every parameter must be loaded. Returns how many were."""
        runner = require(self, "model_runner", type(self).__name__, "weight updates")
        reload = require(runner, "reload_weights", type(runner).__name__, "in-place weight updates")
        model = require(runner, "get_model", type(runner).__name__, "weight updates")()
        weights = _read(source) if isinstance(source, str) else source
        expected = {name for name, _ in model.named_parameters()}
        loaded = _load_reporting_names(model, lambda: reload(weights_iterator=weights, is_checkpoint_format=True))
        left = sorted(expected - loaded)
        if left:
            raise WeightSyncError(
                f"vLLM loaded {len(loaded)} of the model's {len(expected)} parameters; not loaded: {left[:5]}"
                f"{' ...' if len(left) > 5 else ''}. Pass every weight under the base model's names."
            )
        _repack_tied(model)
        return len(loaded)


def _read(path: str) -> list[tuple[str, Any]]:
    from safetensors.torch import load_file

    return list(load_file(path).items())


def _load_reporting_names(model: Any, run: Any) -> set[str]:
    """Run *run* (vLLM's reload) and return the parameter names the model's ``load_weights``
    reported. vLLM's reload only logs a warning for parameters it did not load; the names
    let :meth:`WeightSyncExtension.agentgym_load_weights` refuse a partial update instead."""
    original = require(model, "load_weights", type(model).__name__, "weight updates")
    reported: list[Any] = []

    def recording(weights: Any) -> Any:
        names = original(weights)
        reported.append(names)
        return names

    model.load_weights = recording  # an instance attribute: the reload calls model.load_weights(...)
    try:
        run()
    finally:
        model.__dict__.pop("load_weights", None)
    if not reported:
        raise api_error("reload path through the model's load_weights (reload_weights never called it)",
                        "in-place weight updates")
    if reported[-1] is None:
        raise api_error(f"set of loaded names returned by {type(model).__name__}.load_weights",
                        "checking that a weight update is complete")
    return set(reported[-1])


def _repack_tied(model: Any) -> None:
    """Re-run weight processing for modules that share a weight (a tied ``lm_head``).

    vLLM 0.32 on a CPU packs ``lm_head`` for oneDNN when the model loads. A reload skips a tied
    ``lm_head`` (its weight is the embedding's, loaded once), so its packed copy kept the old
    embedding and the logits came from stale weights. Other platforms read the parameter itself.
    """
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        return
    owners: dict[int, list[Any]] = defaultdict(list)
    for module in model.modules():
        weight = module._parameters.get("weight")
        if weight is not None and hasattr(module, "quant_method"):
            owners[id(weight)].append(module)
    for modules in owners.values():
        if len(modules) > 1:
            for module in modules:
                require(module.quant_method, "process_weights_after_loading", type(module.quant_method).__name__,
                        "repacking a tied weight after an update")(module)
