"""AgentGym env plugin: an office assistant on the service-env kit (``agentgym_service``)."""
