"""Turn-horizon schedulers: ScalingInter-RL stages, a linear ramp, and a success-driven curriculum."""
