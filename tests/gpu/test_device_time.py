"""Device time on the H200 (``pytest -m gpu``): host work before a call never reaches it."""

import random
import time

import pytest
import torch

from evals.harness.measurement.gpu import CudaEventTimer
from evals.harness.measurement.timing import TimingSettings, measure
from evals.harness.targets import get_target

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("device_alone")]

DECODE = "smoke-bf16-d128-q16-b2-c2048-h32k8-causal"


def _host_work(fn, us):
    def slow():
        end = time.perf_counter() + us / 1e6
        while time.perf_counter() < end:
            pass
        return fn()

    return slow


def test_the_spin_hides_host_work_and_a_short_spin_is_caught():
    timer = CudaEventTimer()
    a = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
    plain = sorted(timer.time_call(lambda: a @ a, spin_us=1000).device_us for _ in range(9))[4]
    slow = _host_work(lambda: a @ a, 300)
    hidden = [timer.time_call(slow, spin_us=1000) for _ in range(9)]
    assert all(c.hidden for c in hidden) and all(c.issue_us >= 300 for c in hidden)
    assert sorted(c.device_us for c in hidden)[4] == pytest.approx(plain, rel=0.05)
    short = timer.time_call(slow, spin_us=20)
    assert not short.hidden and short.device_us > plain + 200  # the host's work leaked in


def test_fa3_device_time_ignores_added_host_work_and_latency_shows_it():
    target = get_target("fa3_hopper")
    scenario = next(s for s in target.load_suite("smoke").scenarios if s.id == DECODE)
    sets = target.make_timing_inputs(scenario, [1, 2, 3])
    fa3 = [target.upstream("fa3").prepare(s) for s in sets]
    impls = {"fa3": fa3, "slow": [_host_work(fn, 200) for fn in fa3]}
    settings = TimingSettings(warmup=2, min_trials=20, max_trials=60, time_cap_s=2.0)
    run = measure(impls, timer=CudaEventTimer(), settings=settings, rng=random.Random(0))
    assert run.stats["slow"].median_us == pytest.approx(run.stats["fa3"].median_us, rel=0.03)
    delta = run.latency["slow"].median_us - run.latency["fa3"].median_us
    assert 150 < delta < 400, (run.latency, run.stats)
