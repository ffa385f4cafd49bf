"""The fa4_blackwell target (its folder: see :mod:`evals.targets`)."""
