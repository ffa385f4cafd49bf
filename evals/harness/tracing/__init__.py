"""The GPU trace check, and the profiler a tool runs: which kernels a candidate's calls launched.

``trace`` records the profiler's trace inside the worker and parses it; ``trace_judge``
judges the whole run's trace in the parent, after all timing, call by call. ``ncu`` is the
Nsight Compute command line the ``profile`` tool runs, confined.
"""
