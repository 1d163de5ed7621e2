"""Shaping rewards: penalties for malformed actions and long episodes, and env-score normalisation."""
