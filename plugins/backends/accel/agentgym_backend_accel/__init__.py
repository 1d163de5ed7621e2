"""Accelerator backends: CUDA GPUs and Ascend NPUs."""
