"""Web navigation for AgentGym: MiniWoB++ tasks (default) or a WebArena deployment, in headless Chromium."""
