"""The contract scenarios each run draws from its seed, over what the contract allows.

Runs in the parent, which alone knows the run's secret seed. ``contract_spec`` reads a
target's contract in machine-readable form, ``contract_cover`` builds its pairwise covering
set, ``contract_draw`` draws the rest (in the target's draw space,
:mod:`evals.harness.targets.draw_space`); the suites themselves are
:mod:`evals.harness.scenarios`.
"""
