"""E-commerce customer service for AgentGym: serve a simulated customer through tools under a policy."""
