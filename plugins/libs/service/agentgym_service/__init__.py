"""AgentGym's kit for tool-using service envs (see README.md): tools, calls, a typed database, a
simulated user with a hidden goal, a judge, and the ``ServiceEnv`` base class."""
