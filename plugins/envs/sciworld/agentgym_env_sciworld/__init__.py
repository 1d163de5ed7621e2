"""ScienceWorld as an AgentGym env plugin (``sciworld``)."""
