"""AgentGym env plugin: e-commerce customer service on the service-env kit (``agentgym_service``)."""
