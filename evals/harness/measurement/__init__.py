"""Measurement: how a time is taken, and one measurement per device at a time.

``timing`` (warm-up, interleaved trials, robust statistics) and ``gpu`` (CUDA events with an
L2 flush, device facts) run inside the workers too: there, in the candidate's worker, what
they report is the candidate's to forge, and :mod:`evals.harness.clock_checks` holds it to the
parent's clock. ``process_clock`` (another process's CPU time, read from the kernel) and
``device_lock`` (the file lock around judging) run in the parent; ``cpu_ceilings`` is data.
``stream_gate`` has both sides of a gate on a CUDA stream that the parent opens (a prototype:
``benchmarks/gpu_gated_batch.py`` measures it; no check uses it yet).
"""
