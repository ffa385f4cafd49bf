"""Judging a suite's scenarios in one session: each in turn, the trace, then the upstreams.

Unless told to keep going, the same crash-like failure on two scenarios in a row skips the
rest (each would cost its full timeout or restart for the same answer).

A GPU run judges in two passes (:func:`check_scenarios`, then :func:`measure_scenarios`): the
checks that measure nothing (verification and the probes) under the device's lock shared with
other runs' checks, then, under the lock exclusive, the timing, the trace and the upstreams.
A scenario whose inputs could crowd another run's checks out of the GPU's memory is checked in
the second pass instead. A ``check`` times nothing, so its trace is taken in the first pass, by
the process that verified and probed its scenarios: the second pass starts the candidate's
process afresh, and a kernel that behaves only for its process's first calls would show the
trace only those.
"""

from __future__ import annotations

from typing import Any

from evals.harness.failures import Code, Failure
from evals.harness.judging.judge import PHASES, Session, command_phases, judge_scenario, run_phases
from evals.harness.judging.judge_upstreams import time_all_upstreams
from evals.harness.scenarios import Scenario
from evals.harness.tracing.trace_judge import trace_all
from evals.harness.verdict.record import ScenarioResult, Verdict
from evals.harness.worker_link.session import Progress

__all__ = [
    "FAIL_FAST_CODES",
    "SHARED_MEMORY_SHARE",
    "check_scenarios",
    "judge_scenarios",
    "measure_scenarios",
    "repeated_crash",
]

SHARED_MEMORY_SHARE = 128
"""A scenario is checked beside other runs' checks when its inputs and output take at most
1/128 of the device's memory. Its checks peak at up to about ten times that, worker and this
process together (results/measurements/h200/2026-12-03-s19), and up to
:data:`evals.harness.measurement.device_lock.SHARED_SLOTS` runs check at once, so checkers take at
most about half the memory, leaving the rest to a measuring run's largest scenario; a larger one is
checked while this run holds the device alone."""


def judge_scenarios(
    verdict: Verdict,
    session: Session,
    scenarios: tuple[Scenario, ...],
    progress: Progress | None,
    *,
    keep_going: bool,
) -> None:
    """Judge each scenario, then the trace of all; device state before and after.

    Unless ``keep_going``, the same crash-like failure on two scenarios in a row skips the
    rest (each would cost its full timeout or restart for the same answer).
    """
    state = {"before": session.target.device_state()}
    for i, scenario in enumerate(scenarios):
        stop = _stop(session, verdict.results, keep_going=keep_going)
        if stop is not None:
            verdict.results.append(ScenarioResult(scenario, failure=stop))
        else:
            verdict.results.append(judge_scenario(session, scenario))
        if progress is not None:
            progress(i + 1, len(scenarios), verdict.results[-1])
    _finish(verdict, session, progress, state)


def check_scenarios(
    verdict: Verdict,
    session: Session,
    scenarios: tuple[Scenario, ...],
    progress: Progress | None,
    *,
    keep_going: bool,
    shared_bytes: float,
) -> set[int]:
    """The first pass: verify and probe each scenario of at most ``shared_bytes`` of work.

    Appends a result per scenario to ``verdict.results``; returns the indices of those left
    for :func:`measure_scenarios` to check (larger ones). A ``check`` traces the scenarios it
    checked here, after their calls, in the same process.
    """
    pending: set[int] = set()
    for i, scenario in enumerate(scenarios):
        stop = _stop(session, verdict.results, keep_going=keep_going)
        if stop is not None:
            verdict.results.append(ScenarioResult(scenario, failure=stop))
        elif session.target.work(scenario).bytes > shared_bytes:
            pending.add(i)
            verdict.results.append(ScenarioResult(scenario))
            continue
        else:
            verdict.results.append(judge_scenario(session, scenario, PHASES[:2]))
        if progress is not None:
            progress(i + 1, len(scenarios), verdict.results[-1])
    if _traced_when_checked(session):
        checked = set(range(len(verdict.results))) - pending
        _trace(verdict, session, progress, checked)
    return pending


def measure_scenarios(
    verdict: Verdict,
    session: Session,
    pending: set[int],
    progress: Progress | None,
    *,
    keep_going: bool,
) -> None:
    """The second pass: time each checked scenario; check and time each ``pending`` one.

    Unless ``keep_going``, the same crash-like failure in two scenarios in a row of this pass
    skips the rest of it.
    """
    state = {"before": session.target.device_state()}
    results = verdict.results
    done: list[ScenarioResult] = []
    for i, result in enumerate(results):
        if i not in pending and not result.correct:
            continue
        stop = _stop(session, done, keep_going=keep_going)
        if stop is not None:
            result.failure, result.correct = stop, False
        elif i in pending:
            results[i] = judge_scenario(session, result.scenario)
        elif "time" in command_phases(session.command, result.scenario):
            run_phases(session, result, ("time",))
        done.append(results[i])
        if progress is not None:
            progress(i + 1, len(results), results[i])
    _finish(verdict, session, progress, state, pending if _traced_when_checked(session) else None)


def _traced_when_checked(session: Session) -> bool:
    """Whether the first pass traces what it checked: a ``check``'s (it times nothing)."""
    return session.command == "check"


def _finish(
    verdict: Verdict,
    session: Session,
    progress: Progress | None,
    state: dict[str, Any],
    untraced: set[int] | None = None,
) -> None:
    """Flag skipped scenarios, then the trace, the upstreams, the device's state after.

    ``untraced``: the indices of the results still to trace (None: all of them).
    """
    skipped = [r.failure for r in verdict.results if r.failure and r.failure.code == Code.SKIPPED]
    late = sum(1 for f in skipped if "time budget" in f.reason)
    if late:
        verdict.flags.append(
            f"stopped early: {late} scenario(s) skipped, the candidate's time budget spent"
        )
    if len(skipped) > late:
        verdict.flags.append(
            f"stopped early: {len(skipped) - late} scenario(s) skipped after the same failure on "
            "two scenarios in a row (--keep-going runs them all)"
        )
    _trace(verdict, session, progress, untraced)
    if session.command != "check":
        time_all_upstreams(session, verdict.results, progress)
    state["after"] = session.target.device_state()
    verdict.provenance = {**verdict.provenance, "device_state": state}


def _trace(
    verdict: Verdict, session: Session, progress: Progress | None, indices: set[int] | None
) -> None:
    """The trace of the results at ``indices`` (None: all); one failing it is reported again."""
    results = verdict.results
    chosen = range(len(results)) if indices is None else sorted(indices)
    correct = {i: results[i].correct for i in chosen}
    trace_all(session, [results[i] for i in chosen])
    for i, was in correct.items():
        if was and not results[i].correct and progress is not None:  # failed the trace
            progress(i + 1, len(results), results[i])


FAIL_FAST_CODES = frozenset(
    {Code.CRASH, Code.SANDBOX_VIOLATION, Code.TIMEOUT, Code.EXCEPTION, Code.LOAD_ERROR}
)
"""Failures that repeat on every scenario at full cost: two in a row skip the rest."""


def _stop(session: Session, results: list[ScenarioResult], *, keep_going: bool) -> Failure | None:
    """Why the next scenario is skipped: the candidate's time budget spent, or a repeated crash."""
    if session.budget is not None and session.budget.spent(session.client.request_s):
        return Failure(Code.SKIPPED, "skipped: " + session.budget.reason("before this scenario"))
    return None if keep_going else repeated_crash(results)


def repeated_crash(results: list[ScenarioResult]) -> Failure | None:
    """The skip reason when the last two scenarios failed with the same crash-like code."""
    if len(results) < 2 or results[-1].failure is None or results[-2].failure is None:
        return None
    last, before = results[-1].failure, results[-2].failure
    if last.code == Code.SKIPPED:
        return last
    if last.code != before.code or last.code not in FAIL_FAST_CODES:
        return None
    reason = (
        f"skipped: the candidate failed with {last.code} on the two scenarios before "
        f"({last.reason})"
    )
    return Failure(Code.SKIPPED, reason)
