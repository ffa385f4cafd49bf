"""Integrity II (B): cpu_attention has a plausibility floor. The ceilings are measured with
the worker's threads; the floor sits far under honest times measured in the same run (a
loaded machine measures a lower ceiling, hence a higher floor), and a time under it fails."""

import time
from types import SimpleNamespace

import pytest
import torch

from evals.harness import Code, RunSettings, evaluate, get_target
from evals.harness.judging.judge_time import _plausible
from evals.harness.measurement.cpu_ceilings import CPU_FLOOR_HEADROOM, measure_cpu_ceilings
from evals.harness.measurement.gpu import Ceilings
from evals.harness.verdict.record import ScenarioResult
from tests.helpers import START_CPU, failures_of


def test_ceilings_are_measured_with_headroom_and_restore_the_thread_count():
    before = torch.get_num_threads()
    ceilings = measure_cpu_ceilings(threads=1, reps=1)
    assert torch.get_num_threads() == before
    assert ceilings.matmul_tflops > 0 and ceilings.copy_gbps > 0
    assert ceilings.headroom == CPU_FLOOR_HEADROOM


def test_floor_is_far_under_sdpa_timed_in_the_same_run():
    target = get_target("cpu_attention")
    ceilings = target.measure_ceilings()
    sdpa = target.upstream("sdpa")
    for scenario in target.load_suite("smoke").scenarios:
        run = sdpa.prepare(target.make_inputs(scenario, seed=1))
        run()
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            run()
            best = min(best, (time.perf_counter() - start) * 1e6)
        floor = target.floor_us(scenario, ceilings)
        assert 0 < floor < best / 2, (scenario.id, floor, best)


def test_a_time_under_the_floor_fails_as_implausible():
    target = get_target("cpu_attention")
    scenario = target.load_suite("smoke").scenarios[0]
    ceilings = measure_cpu_ceilings(reps=1)
    floor = target.floor_us(scenario, ceilings)
    session = SimpleNamespace(target=target, ceilings=ceilings)
    fast = ScenarioResult(scenario, times={"candidate": SimpleNamespace(median_us=floor / 2)})
    failure = _plausible(session, scenario, fast)
    assert failure is not None and failure.code == Code.IMPLAUSIBLE
    slow = ScenarioResult(scenario, times={"candidate": SimpleNamespace(median_us=floor * 2)})
    assert _plausible(session, scenario, slow) is None
    assert slow.checks["roofline"].startswith("passed")


@pytest.mark.long  # a bench of the smoke suite, over a minute beside two hogs
def test_bench_checks_the_floor_on_every_scenario_and_fails_under_it(monkeypatch):
    import evals.targets.cpu_attention.target as cpu

    verdict = evaluate(RunSettings("bench", "cpu_attention", START_CPU, suite="smoke"))
    assert verdict.status == "ok", failures_of(verdict)
    assert verdict.provenance["ceilings"]["headroom"] == CPU_FLOOR_HEADROOM
    timed = [r for r in verdict.results if not r.scenario.covering]  # covering rows: untimed
    assert timed and all(r.checks["roofline"].startswith("passed") for r in timed)
    # ceilings a million times lower than this machine's: every honest time is under the floor
    monkeypatch.setattr(cpu, "measure_cpu_ceilings", lambda threads=None: Ceilings(1e-7, 1e-4))
    verdict = evaluate(RunSettings("bench", "cpu_attention", START_CPU, suite="smoke",
                                   scenario_ids=(verdict.results[0].scenario.id,)))
    failures = [r.failure for r in verdict.results]
    assert failures[0] is not None and failures[0].code == Code.IMPLAUSIBLE
