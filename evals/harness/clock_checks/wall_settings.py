"""How the wall-clock check sizes its batches and how far its figure may exceed the reports.

The method is :mod:`evals.harness.clock_checks.wall_clock`'s; these are its settings per device
kind.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CPU_WALL", "GPU_GATED_WALL", "GPU_WALL", "GROWTH", "WallSettings", "wall_settings"]


@dataclass(frozen=True)
class WallSettings:
    """How the wall-clock check sizes its batches, and how far it lets U exceed the reports.

    Attributes:
        tolerance: Relative excess of U over the reported figure allowed (0.5 = 50%).
        margin_us: Absolute excess allowed per call, microseconds: timer granularity and
            launch gaps; small, so the bound scales with the call's length.
        overhead_us: Excess allowed per batch request, microseconds, spread over its calls:
            the worker's own handling of the request (dispatch, the final synchronise) that
            the parent's no-op cannot subtract.
        batch_us: Aim of one batch's duration, microseconds: long against the channel's
            jitter, short enough that some batch of a round runs undisturbed on a busy host.
        min_calls: Calls in a batch at least; the first batch has exactly this many, and the
            next are sized from the larger of the reported figure and the parent's own
            reading so far, so a call far slower than it claims cannot run a batch for long.
        max_calls: Calls in a batch at most (each prepares its own fresh q first).
        batches: Batches in the first round (the first, small one included).
        budget_s: Seconds of the first round after which no further batch starts, once one
            batch of the planned size has run (a slow call's round is its first batch alone).
        retries: Rounds run after a round that fails, each with twice the batches of the one
            before, until one passes: noise only makes U larger, so more batches can only
            bring an honest U down to the truth and never a lying one below it.
        max_s: Seconds after which no further round starts.
        serial: Whether the reported figure is device + host issue time (a GPU: a call that
            synchronises cannot overlap the two) rather than the larger of them (the CPU,
            whose issue time is the work itself); see :func:`reported_us`.
    """

    tolerance: float
    margin_us: float
    overhead_us: float
    batch_us: float
    serial: bool = False
    min_calls: int = 2
    max_calls: int = 1000
    batches: int = 8
    budget_s: float = 0.1
    retries: int = 3
    max_s: float = 5.0


CPU_WALL = WallSettings(tolerance=1.5, margin_us=2.0, overhead_us=400.0, batch_us=2_000.0)
"""CPU targets, metered by the worker's critical path of CPU time, its busiest thread's (the
wall time where less; the whole process's CPU time before session 10): a busy host's
waits do not count, so beside three busy processes on two cores honest kernels' batches came
out at 1.2-1.3x their timed medians. Quiet, one small drawn scenario (4 queries, 108 keys, 5
heads; a 52 us call) came out at 2.4x by the worker's own clock too, the rest at 1.1-1.9x:
back-to-back calls on outputs kept for verification are not the timing loop's calls. So a
tolerance of 2.5x, the rest of the bound per request. The figure the CPU's speedups use is
the batches' own (:mod:`evals.harness.clock_checks.parent_figure`): this bound rejects a forged
timer, it no longer limits what one gains."""
GPU_WALL = WallSettings(
    tolerance=0.25,
    margin_us=2.0,
    overhead_us=100.0,
    batch_us=5_000.0,
    serial=True,
    max_calls=256,
    batches=4,
    max_s=3.0,
)
"""GPU targets: a dedicated device, so fewer, longer batches. The figure is device + host
issue time; up to 256 calls a batch (each fresh q costs a few launches to prepare: 256 keeps
that near the batch's own time)."""


GPU_GATED_WALL = WallSettings(
    tolerance=0.10,
    margin_us=0.5,
    overhead_us=20.0,
    batch_us=5_000.0,
    max_calls=128,
    batches=5,
    max_s=3.0,
)
"""GPU targets whose timing settings gate the wall-clock batches (``gated_wall``): each batch
queued behind the parent's gate, timed from its opening, so the host's issue work is out of
the interval and the figure is the device time alone. The gated prototype on an H100 (session
36, `results/measurements/h100/2026-12-06-s36/`, 5000 us batches) read honest kernels at
0.92-1.04x their event-timed medians and a forge reporting 0.8 of each call at 1.26-1.34x;
FA3's two KV-cache scenarios read 1.15x there, with a flush before each call, and pass the check,
which cycles copies of the sets instead (session 37). Up to 128 calls (the launch queue behind a
closed gate; :mod:`evals.harness.clock_checks.gated_batch` cuts them on a block),
20 us a batch for the opening's write and the final hashing, and 0.5 us a call (no launch gaps
back to back behind a gate: the margin is the event timer's granularity; at 2 us a forge of a
25 us call would gain 1.1x + 8%)."""


GROWTH = 4
"""A batch has at most this many times the calls of the largest batch before it."""


def wall_settings(device: str, *, gated: bool = False) -> WallSettings:
    """The settings for a target's device kind (``cpu`` or ``cuda``), gated or not (GPU)."""
    if device != "cuda":
        return CPU_WALL
    return GPU_GATED_WALL if gated else GPU_WALL
