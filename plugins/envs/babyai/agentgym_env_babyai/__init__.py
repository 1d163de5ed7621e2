"""BabyAI levels (minigrid) as a text game for AgentGym."""
