"""AgentGym env plugin: project planning on the service-env kit (``agentgym_service``)."""
