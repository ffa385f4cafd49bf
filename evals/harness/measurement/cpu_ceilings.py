"""Measured CPU ceilings for the cpu_attention plausibility floor.

The compute ceiling is the best of a few 1024^3 matmuls through torch, in float32 and in
bfloat16 (oneDNN uses AVX512-BF16 or AMX where the CPU has them, so a bf16 kernel with the same
intrinsics is credited that rate), with all the intra-op threads the worker gives a candidate:
a multithreaded candidate cannot use more cores than the ceiling was measured with.

The floor is generous (:data:`CPU_FLOOR_HEADROOM`), because the measurement is noisy in the one
direction that matters: a loaded machine (CI, other jobs sharing the cores) measures a *lower*
ceiling, hence a *higher* floor, and the candidate may be timed later when the machine is idle.
On a shared 2-core machine the best of three matmuls varied 3.5x between runs (20 to 73 GFLOP/s
at 512^3; 1024^3 is steadier). Work skipped or reused runs far more than 10x under any honest
time, so the floor still rejects what it is for.

Only FLOPs bound the floor here: timed calls reuse the same k and v, which stay in the CPU's
caches, so a kernel reads them faster than any DRAM copy rate; the copy rate is measured and
recorded for provenance only.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable

import torch

from evals.harness.measurement.gpu import Ceilings

CPU_FLOOR_HEADROOM = 10.0
"""How far above the measured matmul rate an honest CPU kernel may seem to run (see above)."""
_MATMUL_N = 1024
_COPY_BYTES = 64 << 20


def _best_seconds(fn: Callable[[], object], reps: int) -> float:
    fn()  # warm-up: page faults, oneDNN kernel selection
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def measure_cpu_ceilings(threads: int | None = None, reps: int = 3) -> Ceilings:
    """Matmul TFLOP/s (best of float32 and bfloat16) and copy GB/s, measured now.

    Args:
        threads: Intra-op threads to measure with (the worker's count); None: every CPU this
            process may run on.
        reps: Timed repetitions of each measurement (the best counts).

    Returns:
        Ceilings with :data:`CPU_FLOOR_HEADROOM`.
    """
    previous = torch.get_num_threads()
    torch.set_num_threads(threads or len(os.sched_getaffinity(0)))
    try:
        gen = torch.Generator().manual_seed(0)
        rates = []
        for dtype in (torch.float32, torch.bfloat16):
            a = torch.randn(_MATMUL_N, _MATMUL_N, generator=gen).to(dtype)
            b = torch.randn(_MATMUL_N, _MATMUL_N, generator=gen).to(dtype)
            seconds = _best_seconds(functools.partial(torch.matmul, a, b), reps)
            rates.append(2 * _MATMUL_N**3 / seconds / 1e12)
        src = torch.ones(_COPY_BYTES // 4)
        dst = torch.empty_like(src)
        copy_s = _best_seconds(lambda: dst.copy_(src), reps)
    finally:
        torch.set_num_threads(previous)
    return Ceilings(
        matmul_tflops=max(rates),
        copy_gbps=2 * _COPY_BYTES / copy_s / 1e9,
        headroom=CPU_FLOOR_HEADROOM,
    )
