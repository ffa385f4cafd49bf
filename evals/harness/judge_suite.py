"""Judging a suite's scenarios in one session: each in turn, the trace, then the upstreams.

Unless told to keep going, the same crash-like failure on two scenarios in a row skips the
rest (each would cost its full timeout or restart for the same answer).
"""

from __future__ import annotations

from evals.harness.failures import Code, Failure
from evals.harness.judge import Session, judge_scenario
from evals.harness.judge_upstreams import time_all_upstreams
from evals.harness.scenarios import Scenario
from evals.harness.session import Progress
from evals.harness.trace_judge import trace_all
from evals.harness.verdict import ScenarioResult, Verdict

__all__ = ["FAIL_FAST_CODES", "judge_scenarios", "repeated_crash"]


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
    target = session.target
    state = {"before": target.device_state()}
    for i, scenario in enumerate(scenarios):
        stop = None if keep_going else repeated_crash(verdict.results)
        if stop is not None:
            verdict.results.append(ScenarioResult(scenario, failure=stop))
        else:
            verdict.results.append(judge_scenario(session, scenario))
        if progress is not None:
            progress(i + 1, len(scenarios), verdict.results[-1])
    skipped = sum(1 for r in verdict.results if r.failure and r.failure.code == Code.SKIPPED)
    if skipped:
        verdict.flags.append(
            f"stopped early: {skipped} scenario(s) skipped after the same failure on two "
            "scenarios in a row (--keep-going runs them all)"
        )
    correct = [r.correct for r in verdict.results]
    trace_all(session, verdict.results)
    for i, (was, result) in enumerate(zip(correct, verdict.results, strict=True)):
        if was and not result.correct and progress is not None:  # failed the trace
            progress(i + 1, len(scenarios), result)
    if session.command != "check":
        time_all_upstreams(session, verdict.results, progress)
    state["after"] = target.device_state()
    verdict.provenance = {**verdict.provenance, "device_state": state}


FAIL_FAST_CODES = frozenset(
    {Code.CRASH, Code.SANDBOX_VIOLATION, Code.TIMEOUT, Code.EXCEPTION, Code.LOAD_ERROR}
)
"""Failures that repeat on every scenario at full cost: two in a row skip the rest."""


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
