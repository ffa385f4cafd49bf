"""The GPU trace check of a whole run: one profiler session after all timing, judged per call."""

from __future__ import annotations

import json
import time
from typing import Any

from evals.harness import channel, trace
from evals.harness.failures import Failure
from evals.harness.session import Session, derive_seed
from evals.harness.verdict import ScenarioResult
from evals.harness.worker_client import WorkerFailure

TRACE_S_PER_SCENARIO = 5.0
"""Seconds the trace request may take per scenario (inputs and one call), above the call limit."""


def trace_all(session: Session, results: list[ScenarioResult]) -> None:
    """GPU: profile one call per correct scenario in one session, after all timing.

    Every kernel must be the candidate's own and run on the caller's stream, launched by the
    caller during the call; a scenario that breaks this fails (its times stay on record but
    leave the geomeans, as for any incorrect scenario).
    """
    todo = [r for r in results if r.correct]
    if session.own_kernels is None or not todo:
        return
    items = [
        {
            "scenario": r.scenario.to_json(),
            "seed": derive_seed(session.seed, r.scenario.id, "trace"),
        }
        for r in todo
    ]
    timeout = session.target.limits.call_timeout_s + TRACE_S_PER_SCENARIO * len(items)
    t0 = time.monotonic()
    try:
        header, payload = session.client.request({"op": "trace", "items": items}, timeout_s=timeout)
    except WorkerFailure as exc:  # a hang or crash under the profiler: no call can be cleared
        for r in todo:
            _fail(r, exc.failure, "trace")
        return
    finally:
        session.tally.trace_s += time.monotonic() - t0
    if header.get("restart"):
        session.client.kill()
    stopped = header.get("stopped") or {"index": len(todo)}
    summary = _read_summary(payload) if header.get("traced") else None
    found = trace.judge(summary, session.own_kernels, len(todo)) if summary else []
    for i, r in enumerate(todo):
        failure, finding = found[i] if i < len(found) else (None, "")
        if i == stopped["index"]:
            _fail(r, Failure.from_json(stopped["failure"]), "trace")
        elif i > stopped["index"]:
            r.checks["trace"] = "skipped: tracing stopped at an earlier scenario's failure"
        elif summary is None:
            r.checks["trace"] = f"skipped: the profiler failed: {header.get('error')}"
        elif failure is not None:
            _fail(r, failure, "trace")
        else:
            r.checks["trace"] = finding


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
