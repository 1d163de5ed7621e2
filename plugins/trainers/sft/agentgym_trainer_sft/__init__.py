"""The ``sft`` trainer: supervised fine-tuning on conversations, before RL (a warm start)."""
