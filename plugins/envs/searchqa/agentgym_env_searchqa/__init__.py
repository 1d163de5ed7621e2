"""Deep search (Search-R1-style retrieval QA) as an AgentGym env plugin (``searchqa``)."""
