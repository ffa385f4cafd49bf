"""The cpu_attention target (its folder: see :mod:`evals.targets`)."""
