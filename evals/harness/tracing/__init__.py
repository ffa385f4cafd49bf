"""The GPU trace check: which kernels a candidate's calls really launched.

``trace`` records the profiler's trace inside the worker and parses it; ``trace_judge`` judges
the whole run's trace in the parent, after all timing, call by call.
"""
