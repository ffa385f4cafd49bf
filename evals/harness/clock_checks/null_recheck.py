"""The null batches timed again once no process of the candidate exists, and the check redone.

A gated check's null batches (:mod:`evals.harness.clock_checks.null_batches`) run while the
candidate's worker is stopped, but device work that process queued before it was stopped
still runs, and it would lengthen the null batches and so shorten U. The upstreams are timed
only once the candidate's worker is killed (THREATS.md); a passed gated check is kept here
(``Session.null_rechecks``, :class:`evals.harness.clock_checks.null_batches.Kept`) and, at that
point, :func:`recheck` times the null batches of each size again and judges the same batches
against the faster null of the two. A second null can only lengthen U, so this fails a forge
the first judgement let through; a check that failed there is not kept.
"""

from __future__ import annotations

import dataclasses
import time

from evals.harness.clock_checks.null_batches import Kept
from evals.harness.clock_checks.wall_check import withhold
from evals.harness.clock_checks.wall_reading import Batch, conclude, judge
from evals.harness.failures import Code, Failure
from evals.harness.verdict.record import ScenarioResult
from evals.harness.worker_link.session import Session, derive_seed

__all__ = ["recheck"]


def recheck(session: Session, result: ScenarioResult) -> Failure | None:
    """Judge the scenario's kept checks again against null batches timed now.

    Call only once the candidate's worker is killed. Each size of batch gets fresh null
    batches in the upstreams' worker; each batch is judged against the faster of its two
    nulls. Recorded under ``timing[NAME]['late_null_us']`` (per size, microseconds) and
    ``['late_per_call_us']`` (U so judged).

    Returns:
        ``timing_mismatch`` where U now exceeds the bound (a contract scenario's speedups are
        withheld instead), or None.

    Raises:
        WorkerFailure: ``harness_error``: the upstreams' worker failed.
    """
    kept = session.null_rechecks.pop(result.scenario.id, [])
    if not kept:
        return None
    start = time.monotonic()
    try:
        for check in kept:
            failure = _again(result, check)
            if failure is not None:
                return failure
        return None
    finally:
        spent = time.monotonic() - start
        result.seconds["null_recheck"] = result.seconds.get("null_recheck", 0.0) + spent


def _again(result: ScenarioResult, kept: Kept) -> Failure | None:
    """One kept check judged again (every size re-nulled: a longer U can count more sizes)."""
    late = dataclasses.replace(kept.nulls, seed=derive_seed(kept.nulls.seed, "late"), walls={},
                               ready=False)  # fmt: skip
    try:
        walls = {calls: late.wall_s(calls) for calls in sorted({b.calls for b in kept.batches})}
    finally:
        late.drop()
    batches = [_faster(b, walls.get(b.calls)) for b in kept.batches]
    reading = conclude(batches, kept.reported, kept.settings, kept.max_calls)
    record = result.timing.get(kept.key.removesuffix("_clock"))
    if isinstance(record, dict):
        record["late_null_us"] = {str(n): s * 1e6 for n, s in walls.items()}
        record["late_per_call_us"] = reading.per_call_us
    failure = judge(reading, kept.reported, kept.settings)
    if failure is None:
        return None
    why = f"{failure.reason}; null batches timed again once the candidate's process was gone"
    failure = Failure(Code.TIMING_MISMATCH, why)
    if result.scenario.contract:
        withhold(result, kept.key, failure)
        return None
    result.checks[kept.key] = f"failed: {why}"
    return failure


def _faster(batch: Batch, late_s: float | None) -> Batch:
    if late_s is None or batch.null_s is None:
        return batch
    return dataclasses.replace(batch, null_s=min(batch.null_s, late_s))
