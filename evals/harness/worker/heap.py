"""The worker's C heap keeps the memory it was given: freed blocks stay mapped for reuse.

A wall-clock batch keeps every call's output until the parent has chosen which to verify
(:mod:`evals.harness.worker.wall`). With glibc's defaults, the memory those outputs take is
returned to the kernel when they are dropped (large blocks are mapped and unmapped one by one,
and the heap's free top is trimmed), so every batch faults its outputs' pages in afresh: on
this project's 2-core machine, 40-80 us a call for a 128 KB output, more than a small call's
own work, inside the figure that on a CPU target every speedup uses
(:mod:`evals.harness.clock_checks.parent_figure`). Raising the mapping and trimming thresholds keeps
freed memory in the heap, so a batch reuses the pages the batch before it faulted in, as a timing
loop reuses its one output's: the same for the candidate's worker and the upstreams'.
"""

from __future__ import annotations

import ctypes
import ctypes.util

__all__ = ["retain_freed_memory"]

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_THRESHOLD = 1 << 30
"""Bytes of free heap top kept rather than trimmed."""
_MMAP_MAX = 32 << 20
"""Bytes: blocks below this come from the heap (glibc's largest mapping threshold on a 64-bit
host; larger blocks are still mapped one by one)."""


def retain_freed_memory() -> bool:
    """Raise glibc's thresholds in this process; whether it took (not on another C library)."""
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c")).mallopt
    except (OSError, AttributeError, TypeError):
        return False
    trim = mallopt(_M_TRIM_THRESHOLD, _THRESHOLD)
    return bool(trim and mallopt(_M_MMAP_THRESHOLD, _MMAP_MAX))
