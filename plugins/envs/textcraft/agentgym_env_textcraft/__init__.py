"""TextCraft (Minecraft crafting from text, ADaPT recipes) for AgentGym."""
