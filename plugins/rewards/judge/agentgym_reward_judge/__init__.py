"""The ``judge`` reward: episodes scored by a model judge against a rubric (see README.md).

``reward`` holds the reward, ``rubric`` the rubrics, ``prompt`` what the judge sees, ``verdict`` the
strict parser, ``judges`` the OpenAI-compatible and local-engine judges, ``cache`` the verdict cache.
"""
