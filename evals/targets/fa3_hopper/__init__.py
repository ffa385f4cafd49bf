"""The fa3_hopper target (its folder: see :mod:`evals.targets`)."""
