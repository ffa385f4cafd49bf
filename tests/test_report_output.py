"""The report counts each scenario once, shows lock waits apart, and says each scenario once."""

import io

from evals.harness.measurement.device_lock import LockRecord
from evals.harness.measurement.timing import TimingStats
from evals.harness.targets import get_target
from evals.harness.verdict import report
from evals.harness.verdict.record import ScenarioResult, Verdict

SCENARIOS = get_target("cpu_attention").load_suite("smoke").scenarios
SLOW = "timing did not converge ({} stopped at time_cap): rse 4.00% over the target 1.00%"


def _stats(us):
    return TimingStats(median_us=us, mad_us=1.0, min_us=us, max_us=us, rse=0.01, n=10)


def _result(scenario, *, upstream=False, flags=()):
    result = ScenarioResult(scenario, correct=True, flags=list(flags))
    result.times = {"candidate": _stats(100.0)}
    if upstream:
        result.times["sdpa"] = _stats(150.0)
    return result


def test_a_scenario_whose_candidate_and_upstreams_did_not_converge_counts_once():
    both = [SLOW.format("the candidate's timing"), SLOW.format("the upstreams' timing")]
    results = [_result(SCENARIOS[0], flags=both), _result(SCENARIOS[1], flags=both[:1])]
    [line] = report.notes(results)
    assert "did not converge on 2 scenario(s)" in line
    assert line.count(SCENARIOS[0].id) == 1


def test_a_wait_for_the_device_lock_is_its_own_term_not_other():
    verdict = Verdict("bench", "cpu_attention", "smoke", {"path": "k.cpp"}, 1, "ok")
    verdict.results = [_result(s, upstream=True) for s in SCENARIOS]
    verdict.upstreams = {"sdpa": "torch"}
    verdict.timing = {
        "wall_s": 100.0,
        "build_s": 10.0,
        "candidate_calls_s": 5.0,
        "upstream_calls_s": 5.0,
        "reference_s": 5.0,
    }
    verdict.lock = LockRecord(device="cpu", path="/tmp/cpu.lock", waited_s=60.0)
    [line] = [ln for ln in report.render(verdict).splitlines() if ln.startswith("time:")]
    assert "waiting for the device lock 60.0 s + other 15.0 s" in line


def test_each_scenario_is_printed_once_then_only_what_is_new():
    out = io.StringIO()
    printer = report.ProgressPrinter(stream=out)
    first = _result(SCENARIOS[0])
    printer(1, 2, first)  # the candidate's side judged
    printer(1, 2, first)  # told again with nothing new: no line
    timed = _result(SCENARIOS[0], upstream=True)
    printer(1, 2, timed)  # its upstreams timed: the speedups only
    failed = _result(SCENARIOS[0], upstream=True)
    failed.correct = False
    printer(1, 2, failed)  # a later check failed it
    lines = out.getvalue().splitlines()
    assert len(lines) == 3
    assert lines[0] == f"[1/2] {SCENARIOS[0].id}: ok 100.0 us"
    assert lines[1] == f"[1/2] {SCENARIOS[0].id}: sdpa 1.500x (upstreams timed)"
    assert lines[2].startswith(f"[1/2] {SCENARIOS[0].id}: FAIL")


def test_a_dry_runs_report_says_so_under_its_first_line():
    note = "dry run on sm_90, not a Blackwell measurement"
    verdict = Verdict("bench", "fa4_blackwell", "smoke", {"path": "k.cu"}, 1, "ok")
    verdict.results = [_result(s, upstream=True) for s in SCENARIOS]
    verdict.upstreams = {"sdpa": "torch"}
    verdict.provenance = {"device": {"arch": "sm_90a", "note": note}}
    assert report.render(verdict).splitlines()[1] == f"NOTE: {note}"
    assert "device time (host work hidden)" in report.render(verdict)  # a GPU target's clock
    verdict.provenance = {"device": {"arch": "sm_100a"}}
    assert "NOTE:" not in report.render(verdict)
