"""The ``codefix`` env: repair HumanEval programs with injected bugs, tests run in a sandbox."""
