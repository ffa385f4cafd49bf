"""The run's time budget (evals/harness/worker_link/budget.py): past it the candidate gets no
more time, and the run still ends with a verdict whose failures are the candidate's.

Before it, a candidate slow in every call but under each request's limit made a run outlast
its caller's limit: no verdict, a fault the scorer booked as the harness's (the sample retried
and left out of every statistic)."""

import time

import pytest

from evals.harness import Code, RunSettings, evaluate
from evals.harness.building.build import build
from evals.harness.pipeline.runner import NOT_THE_CANDIDATE
from evals.harness.targets import get_target
from tests.helpers import CPU_KERNELS, START_CPU, run_harness

HANG = CPU_KERNELS / "hang.cpp"


def _budget_failures(verdict):
    return [r.failure for r in verdict.results if r.failure and "time budget" in r.failure.reason]


def test_a_spent_budget_skips_every_scenario_as_the_candidates_failure():
    verdict = evaluate(RunSettings("check", "cpu_attention", START_CPU, suite="smoke",
                                   time_budget_s=0.01))
    assert verdict.status == "failed" and verdict.failure is None
    codes = {r.failure.code for r in verdict.results}
    assert codes == {Code.SKIPPED} and not codes & NOT_THE_CANDIDATE
    assert len(_budget_failures(verdict)) == len(verdict.results)
    assert "the run's time budget of 0 s ran out (before this scenario)" in (
        verdict.results[0].failure.reason)
    assert any("time budget spent" in f for f in verdict.flags), verdict.flags
    assert verdict.settings["time_budget_s"] == 0.01


def test_the_cli_refuses_a_budget_that_is_not_a_positive_number_in_one_line():
    for bad in ("0", "-5", "inf", "soon"):
        proc = run_harness("check", "--target", "cpu_attention", "--kernel", str(START_CPU),
                           "--time-budget", bad, timeout=120)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert "--time-budget" in proc.stderr.strip().splitlines()[-1]


@pytest.mark.long  # a request cut by the budget: half a minute or more
def test_a_hanging_call_is_cut_at_the_budget_not_at_its_own_limit():
    build(get_target("cpu_attention"), HANG)  # cached: the budget is not spent compiling
    t0 = time.monotonic()
    evaluate(RunSettings("check", "cpu_attention", HANG, suite="smoke", time_budget_s=0.01))
    start_s = time.monotonic() - t0  # this machine's cost of a run up to its first scenario
    budget = 3 * start_s + 10
    t0 = time.monotonic()
    verdict = evaluate(RunSettings("check", "cpu_attention", HANG, suite="smoke",
                                   call_timeout_s=600, time_budget_s=budget))
    elapsed = time.monotonic() - t0
    first = verdict.results[0].failure
    assert first.code == Code.TIMEOUT and "time budget" in first.reason, first
    assert {r.failure.code for r in verdict.results[1:]} == {Code.SKIPPED}
    assert elapsed < budget + start_s + 30 < 600, (elapsed, budget)  # not the call's 600 s
