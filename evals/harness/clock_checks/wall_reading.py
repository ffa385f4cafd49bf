"""The reading of the parent's wall-clock batches: U, the bound it is held to, the decision.

:mod:`evals.harness.clock_checks.wall_clock` runs the batches (its docstring gives the method);
this module turns what the parent saw of them into U (the smallest per-call time of the batches
of the planned size, less the channel's round trip, the flips and the digests), the bound the
candidate's reported figure sets for it, and the ``timing_mismatch`` that a U beyond the bound
is. Pure arithmetic on the parent's own figures: nothing here talks to a worker.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

from evals.harness.clock_checks.wall_settings import WallSettings
from evals.harness.failures import Code, Failure
from evals.harness.measurement.timing import TimingStats, summarize


@dataclass(frozen=True)
class Batch:
    """One batch as the parent saw it.

    Attributes:
        calls: Calls in the batch.
        wall_s: The batch request's round trip on the parent's clock, seconds.
        ping_s: The channel's round trip as the parent measured it itself, seconds
            (subtracted).
        worker_s: The worker's own figure for the calls, seconds (for the record only).
        digest_s: The digests' cost for this many outputs as the parent timed it, seconds
            (subtracted).
        worker_ping_s: The worker's no-op round trip just before the batch, seconds (for the
            record only: a process that inflated it must not shrink U).
        flip_s: Flipping the calls' fresh queries inside the batch as the parent itself
            does it, seconds (subtracted).
        null_s: The same batch with calls that do nothing, run where no candidate runs
            (:mod:`evals.harness.clock_checks.null_batches`), seconds; where given, it alone is
            subtracted (it holds the round trip, the flips and the digests as this batch
            does), and ``ping_s``, ``digest_s`` and ``flip_s`` are for the record.
    """

    calls: int
    wall_s: float
    ping_s: float
    worker_s: float = 0.0
    digest_s: float = 0.0
    worker_ping_s: float = 0.0
    flip_s: float = 0.0
    null_s: float | None = None

    def per_call_us(self, ping_s: float) -> float:
        """Microseconds per call, the overhead taken off.

        That is the null batch where there is one (:attr:`null_s`), else ``ping_s`` (seconds),
        the digests and the flips.
        """
        if self.null_s is not None:
            return max(0.0, self.wall_s - self.null_s) / self.calls * 1e6
        spent = self.wall_s - ping_s - self.digest_s - self.flip_s
        return max(0.0, spent) / self.calls * 1e6

    def gross_us(self, ping_s: float) -> float:
        """Microseconds per call with ``ping_s`` (seconds) alone taken off (flips, digests in)."""
        return max(0.0, self.wall_s - ping_s) / self.calls * 1e6


@dataclass(frozen=True)
class Reading:
    """What the parent's clock concluded over one or more rounds of batches.

    Attributes:
        per_call_us: U: the smallest per-call time of any batch, microseconds.
        ping_us: The smallest no-op round trip, subtracted from every batch, microseconds.
        calls: Calls in all batches; ``batches`` their number.
        best_calls: Calls in the batch that gave U.
        worker_us: The worker's own per-call figure in that batch (for the record only).
        figures_us: The per-call figure of each batch that counted, microseconds (on a CPU
            target their summary is the time every speedup uses: :func:`figure_stats`).
        gross_us: Each counted batch's per-call time with the flips and digests left in,
            microseconds (a CPU target's figure on small calls).
        null_us: The null batch subtracted from the batch that gave U, microseconds (None:
            the round trip, flips and digests were subtracted instead).
    """

    per_call_us: float
    ping_us: float
    calls: int
    batches: int
    best_calls: int
    worker_us: float
    figures_us: tuple[float, ...] = ()
    gross_us: tuple[float, ...] = ()
    null_us: float | None = None

    def to_json(self) -> dict[str, float | int]:
        """JSON form (microseconds and counts; ``null_us`` where a null batch was subtracted)."""
        null = {} if self.null_us is None else {"null_us": self.null_us}
        return {
            **null,
            "per_call_us": self.per_call_us,
            "ping_us": self.ping_us,
            "calls": self.calls,
            "batches": self.batches,
            "best_calls": self.best_calls,
            "worker_us": self.worker_us,
        }


def read(batches: Sequence[Batch], *, planned: int = 0) -> Reading:
    """U over ``batches``, with the smallest channel round trip subtracted from each.

    The smallest ping subtracts the least, so the figure errs towards a slower candidate.
    Only batches of at least ``planned`` calls count when there are any: a short batch's
    share of the request's own overhead is large, and so is its allowance
    (:func:`bound_us`), so a figure from the sizing batch alone would let a timer lie by
    that much.
    """
    if not batches:
        raise ValueError("no batches")
    ping = min(b.ping_s for b in batches)
    counted = [b for b in batches if b.calls >= planned] or list(batches)
    best = min(counted, key=lambda b: b.per_call_us(ping))
    return Reading(
        per_call_us=best.per_call_us(ping),
        ping_us=ping * 1e6,
        calls=sum(b.calls for b in batches),
        batches=len(batches),
        best_calls=best.calls,
        worker_us=best.worker_s / best.calls * 1e6,
        figures_us=tuple(b.per_call_us(ping) for b in counted),
        gross_us=tuple(b.gross_us(ping) for b in counted),
        null_us=None if best.null_s is None else best.null_s * 1e6,
    )


def figure_stats(reading: Reading, *, gross: bool = False) -> TimingStats:
    """The parent's time per call over the batches that counted, as timing stats.

    ``median_us`` carries U, the fastest batch's per-call time (noise only adds time, and a
    batch of a few calls is noisy: the median of a slow kernel's batches of two calls came out
    35% above their fastest); the rest summarise the batches (``n``: their number).
    ``gross``: the batches' times with the flips and digests left in (``median_us`` their
    fastest).
    """
    if gross and reading.gross_us:
        return dataclasses.replace(summarize(reading.gross_us), median_us=min(reading.gross_us))
    spread = summarize(reading.figures_us or (reading.per_call_us,))
    return dataclasses.replace(spread, median_us=reading.per_call_us)


def conclude(
    batches: Sequence[Batch], reported: float, settings: WallSettings, max_calls: int | None
) -> Reading:
    """The reading that decides: over batches of the size the calls called for."""
    planned = calls_for(max(reported, read(batches).per_call_us), settings, max_calls)
    return read(batches, planned=planned)


def reported_us(device: TimingStats, issue: TimingStats | None, *, serial: bool = False) -> float:
    """The figure U is held to, microseconds.

    Args:
        device: The candidate's device-time stats (on the CPU: its wall time).
        issue: Its host issue-time stats, if the target has them.
        serial: Whether host issue and device work can follow each other instead of
            overlapping (GPU: a call that synchronises, e.g. to read a length back, leaves the
            device idle while it issues, so back to back a call costs issue + device time).
            On the CPU the issue time is the work itself: the larger of the two.
    """
    issue_us = issue.median_us if issue is not None else 0.0
    if serial:
        return device.median_us + issue_us
    return max(device.median_us, issue_us)


def bound_us(reported: float, settings: WallSettings, calls: int | None = None) -> float:
    """The largest U the reported figure (microseconds) explains for batches of ``calls``.

    ``calls`` None: the bound for one call alone (the whole per-request overhead).
    """
    per_request = settings.overhead_us / max(1, calls or 1)
    return reported * (1.0 + settings.tolerance) + settings.margin_us + per_request


def judge(reading: Reading, reported: float, settings: WallSettings) -> Failure | None:
    """The decision: a failure when the parent's U is more than ``reported`` explains.

    Args:
        reading: The parent's figures.
        reported: The worker's figure for one call (:func:`reported_us`), microseconds.
        settings: Tolerance and margins.

    Returns:
        ``timing_mismatch`` naming both figures, or None.
    """
    bound = bound_us(reported, settings, reading.best_calls)
    if reading.per_call_us <= bound:
        return None
    if reading.null_us is None:
        taken = f"the channel's {reading.ping_us:.0f} us round trip subtracted"
    else:
        taken = f"the same batch of null calls, {reading.null_us:.0f} us, subtracted"
    reason = (
        f"the parent's clock saw {reading.per_call_us:.0f} us per call over "
        f"{reading.best_calls} back-to-back calls (best of {reading.batches} batches, "
        f"{taken}); the worker reported {reported:.0f} us (allowed: {bound:.0f} us)"
    )
    return Failure(Code.TIMING_MISMATCH, reason)


def calls_for(
    per_call_us: float, settings: WallSettings, max_calls: int | None = None, scale: float = 1.0
) -> int:
    """Calls making a batch of about ``settings.batch_us`` x ``scale``, within the call bounds.

    ``max_calls`` lowers the upper bound (the outputs a batch may keep for verification).
    """
    top = settings.max_calls if max_calls is None else max(1, min(settings.max_calls, max_calls))
    wanted = settings.batch_us * scale / max(per_call_us, 1e-3)
    return int(min(top, max(min(settings.min_calls, top), math.ceil(wanted))))
