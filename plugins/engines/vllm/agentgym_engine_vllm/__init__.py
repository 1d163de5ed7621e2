"""The ``vllm`` rollout engine for GPU users (written against vLLM's documented API; untested here)."""
