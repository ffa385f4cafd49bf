"""Measurement: how a time is taken, and the figure a speedup uses.

``timing`` (warm-up, interleaved trials, robust statistics) and ``gpu`` (CUDA events with an
L2 flush, device facts) run inside the workers too: there, in the candidate's worker, what
they report is the candidate's to forge and is checked by :mod:`evals.harness.clock_checks`.
``parent_figure``, ``process_clock`` and ``channel_cost`` run in the parent only: on the CPU
the figure that enters a speedup is the parent's. ``cpu_ceilings`` and ``ncu`` are data and a
command line.
"""
