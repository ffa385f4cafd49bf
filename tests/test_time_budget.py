"""The candidate's time budget (evals/harness/worker_link/budget.py): once its build and its
worker's requests have taken it, the candidate gets no more time, and the run still ends with
a verdict whose failures are the candidate's.

Before it, a candidate slow in every call but under each request's limit made a run outlast
its caller's limit: no verdict, a fault the scorer booked as the harness's (the sample retried
and left out of every statistic). Waits for the device's lock never spend it."""

import time

import pytest

from evals.harness import Code, RunSettings, evaluate
from evals.harness.building.build import build
from evals.harness.pipeline.runner import NOT_THE_CANDIDATE
from evals.harness.targets import get_target
from evals.harness.worker_link.budget import Budget
from tests.helpers import CPU_KERNELS, START_CPU, run_harness

HANG = CPU_KERNELS / "hang.cpp"


class _Built:
    seconds = 4.0


def test_the_budget_counts_the_build_and_the_requests_and_nothing_else():
    assert Budget.after_build(None, _Built()) is None
    budget = Budget.after_build(10.0, _Built())
    assert budget is not None and budget.left_s(5.0) == 1.0 and not budget.spent(5.0)
    assert budget.spent(6.0) and Budget.after_build(10.0, None).left_s(0.0) == 10.0


def test_a_spent_budget_skips_the_scenarios_left_as_the_candidates_failure():
    verdict = evaluate(RunSettings("check", "cpu_attention", START_CPU, suite="smoke",
                                   time_budget_s=0.01))
    assert verdict.status == "failed" and verdict.failure is None
    # a request already under way gets a moment; every scenario after the first is skipped
    later = [r.failure for r in verdict.results[1:]]
    assert later and all(f.code == Code.SKIPPED and "time budget" in f.reason for f in later)
    assert "the candidate's time budget of 0 s ran out (before this scenario)" in later[0].reason
    codes = {r.failure.code for r in verdict.results if r.failure}
    assert not codes & NOT_THE_CANDIDATE
    assert any("time budget spent" in f for f in verdict.flags), verdict.flags
    assert verdict.settings["time_budget_s"] == 0.01


def test_the_cli_refuses_a_budget_that_is_not_a_positive_number_in_one_line():
    for bad in ("0", "-5", "inf", "soon"):
        proc = run_harness("check", "--target", "cpu_attention", "--kernel", str(START_CPU),
                           "--time-budget", bad, timeout=120)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert "--time-budget" in proc.stderr.strip().splitlines()[-1]


@pytest.mark.long  # a request cut by the budget: twenty seconds of a hanging call
def test_a_hanging_call_is_cut_at_the_budget_not_at_its_own_limit():
    build(get_target("cpu_attention"), HANG)  # cached: the run's build takes none of it
    t0 = time.monotonic()
    verdict = evaluate(RunSettings("check", "cpu_attention", HANG, suite="smoke",
                                   call_timeout_s=600, time_budget_s=20))
    elapsed = time.monotonic() - t0
    first = verdict.results[0].failure
    assert first.code == Code.TIMEOUT and "time budget of 20 s ran out" in first.reason, first
    assert {r.failure.code for r in verdict.results[1:]} == {Code.SKIPPED}
    assert elapsed < 300, elapsed  # not the call's own 600 s
