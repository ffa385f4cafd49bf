"""Scenarios: the suites, and the contract scenarios each run draws from its seed.

Runs in the parent, which alone knows the run's secret seed. ``contract_spec`` reads a
target's contract in machine-readable form, ``contract_cover`` builds its pairwise covering
set, ``contract_draw`` and ``draw_space`` draw the rest; ``scenarios`` (the suites' data
files) is also imported by the workers, which receive each scenario from the parent.
"""
