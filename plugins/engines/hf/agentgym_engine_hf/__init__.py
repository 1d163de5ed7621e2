"""The ``hf`` rollout engine: transformers models on CPU or GPU."""
