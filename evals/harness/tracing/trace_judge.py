"""The GPU trace check of a whole run: one profiler session after all timing, judged per call.

Each correct scenario gets :data:`TRACE_CALLS` calls made exactly as its timing loop made them
(the first timing round's input sets, fresh queries, the L2 flush, the spin and the events), so
a candidate cannot behave one way when timed and another when traced without the check seeing
it: every traced call is judged on its own, and the traced calls' device time must agree with
the timed median (:data:`TRACED_SLOWER_FACTOR`). A traced call's device time is the sum of the
durations the profiler recorded for the GPU work launched in it: under the profiler the host's
launches slow down, and on a loaded machine they can outlast the spin, so the events' interval
would also hold host time (an honest 7.5 us call read 107 us that way on the H200).
"""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

from evals.harness.failures import Code, Failure
from evals.harness.tracing import trace
from evals.harness.verdict.record import ScenarioResult
from evals.harness.worker_link import channel
from evals.harness.worker_link.session import Session, derive_seed, timing_seeds
from evals.harness.worker_link.worker_client import WorkerFailure

TRACE_CALLS = 3
"""Traced calls per scenario, made as timed calls are (one per timing input set)."""
TRACE_S_PER_SCENARIO = 5.0
"""Seconds the trace request may take per scenario (inputs and its calls), above the limit."""
TRACED_SLOWER_FACTOR = 1.25
TRACED_SLOWER_MARGIN_US = 10.0
"""The traced calls' median device time may exceed the timed median by this factor plus
margin; beyond it, the candidate did less work when timed than when traced (or its timer
reports less than its work takes), and the scenario fails. Honest kernels' traced calls came
out at 0.75-1.10x their timed medians over 837 scenarios (H100, H200), and the faster example's
split-KV calls on one speculative-decoding scenario at 1.127x in each of three runs (H100:
``results/measurements/h100/2026-12-05-s30/``), so 1.25x, the wall-clock check's tolerance.
Until fa3_hopper 23 the bound was 2x + 50 us and, the harness's range around each traced call
hiding the call's own work from the sum, held the timed median to nothing: a timer forged to
report 0.55-0.8x of each call, its host issue padded, passed every check."""


def trace_all(session: Session, results: list[ScenarioResult], *, calls: int = TRACE_CALLS) -> None:
    """GPU: profile ``calls`` timed-like calls per correct scenario in one session.

    Every kernel must be the candidate's own and run on the caller's stream, launched by the
    caller during the call; a scenario with a call that breaks this fails (its times stay on
    record but leave the geomeans, as for any incorrect scenario).
    """
    todo = [r for r in results if r.correct]
    if session.own_kernels is None or not todo:
        return
    items = [_item(session, r) for r in todo]
    timeout = session.target.limits.call_timeout_s + TRACE_S_PER_SCENARIO * len(items)
    t0 = time.monotonic()
    try:
        request = {"op": "trace", "items": items, "calls": calls}
        header, payload = session.client.request(request, timeout_s=timeout)
    except WorkerFailure as exc:  # a hang or crash under the profiler: no call can be cleared
        for r in todo:
            _fail(r, exc.failure, "trace")
        return
    finally:
        session.tally.trace_s += time.monotonic() - t0
    if header.get("restart"):
        session.client.kill()
    stopped = header.get("stopped") or {"index": len(todo) * calls}
    stop_item = int(stopped["index"]) // calls
    summary = _read_summary(payload) if header.get("traced") else None
    found = trace.judge(summary, session.own_kernels, len(todo) * calls) if summary else []
    for i, r in enumerate(todo):
        if i == stop_item:
            _fail(r, Failure.from_json(stopped["failure"]), "trace")
        elif i > stop_item:
            r.checks["trace"] = "skipped: tracing stopped at an earlier scenario's failure"
        elif summary is None:
            r.checks["trace"] = f"skipped: the profiler failed: {header.get('error')}"
        else:
            busy = _busy_us(summary, i * calls, calls)
            _judge_scenario(r, found[i * calls : (i + 1) * calls], busy)


def _item(session: Session, result: ScenarioResult) -> dict[str, Any]:
    """The trace request's item for one scenario: its timing seeds, a fresh-q seed, the spin."""
    scenario = result.scenario
    spin = (result.timing.get("spin_us") or {}).get("candidate")
    return {
        "scenario": scenario.to_json(),
        "seeds": timing_seeds(session, scenario, 0),
        "rng_seed": derive_seed(session.seed, scenario.id, "trace"),
        "fresh_queries": session.target.timing.fresh_queries,
        "spin_us": float(spin if spin is not None else session.target.timing.spin_min_us),
    }


def _judge_scenario(
    result: ScenarioResult, verdicts: list[tuple[Failure | None, str]], device_us: list[float]
) -> None:
    """One scenario from its calls' verdicts and the traced calls' device times."""
    failures = [f for f, _ in verdicts if f is not None]
    passed = [finding for f, finding in verdicts if f is None and finding.startswith("passed")]
    if failures:
        _fail(result, failures[0], "trace")
        return
    if not passed:
        skipped = verdicts[0][1] if verdicts else "skipped: no traced call"
        result.checks["trace"] = skipped
        return
    timed = result.times.get("candidate")
    traced = statistics.median(device_us) if device_us else None
    if timed is not None and traced is not None:
        limit = TRACED_SLOWER_FACTOR * timed.median_us + TRACED_SLOWER_MARGIN_US
        if traced > limit:
            reason = (
                f"traced calls, made as timed ones, took {traced:.1f} us (median of "
                f"{len(device_us)}); the timed median was {timed.median_us:.1f} us"
            )
            _fail(result, Failure(Code.TRACE_VIOLATION, reason), "trace")
            return
    times = f"; traced {traced:.1f} us a call" if traced is not None else ""
    result.checks["trace"] = f"{passed[0]} ({len(passed)} of {len(verdicts)} calls{times})"


def _busy_us(summary: dict[str, Any], first: int, calls: int) -> list[float]:
    """Device time (us) of calls ``first .. first+calls-1``: their GPU work's summed durations.

    Everything launched inside a call's range counts: the call runs inside the harness's own
    range (the timer's flush, spin and events around it), so the ``harness`` mark says nothing
    about work launched within the call.
    """
    busy = {str(index): 0.0 for index in range(first, first + calls)}
    for activity in summary.get("activities", []):
        call = activity.get("call")
        if call in busy:
            busy[call] += float(activity.get("dur") or 0.0)
    return list(busy.values())


def _read_summary(payload: channel.Buffer) -> dict[str, Any] | None:
    """The worker's trace summary (JSON in the payload), or None if it is unreadable."""
    try:
        summary = json.loads(bytes(payload))
    except ValueError:
        return None
    return summary if isinstance(summary, dict) else None


def _fail(result: ScenarioResult, failure: Failure, check: str) -> None:
    """Mark a scenario failed after the fact, by ``check``."""
    result.failure, result.correct = failure, False
    result.checks[check] = f"failed: {failure.reason}"
