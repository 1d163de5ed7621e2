"""AgentGym agent strategies ``plan`` and ``reflect`` (see README.md)."""
