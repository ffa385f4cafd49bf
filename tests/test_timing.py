import random

import pytest

from evals.harness.measurement.timing import (
    CallTime,
    PerfCounterTimer,
    TimingSettings,
    call_seed,
    measure,
    summarize,
)


def test_summarize_median_mad_and_rse():
    st = summarize([10.0, 11.0, 9.0, 10.0, 30.0])
    assert st.median_us == 10.0
    assert st.mad_us == 1.0
    assert st.min_us == 9.0 and st.max_us == 30.0 and st.n == 5
    # robust: the outlier does not inflate the spread estimate
    assert st.rse == pytest.approx(1.2533 * 1.4826 * 1.0 / 5**0.5 / 10.0, rel=1e-3)
    assert summarize([5.0] * 4).rse == 0.0
    with pytest.raises(ValueError):
        summarize([])


class ScriptedTimer:
    """Returns a fixed duration per callable and records the call order (no latency rounds)."""

    def __init__(self) -> None:
        self.order: list[str] = []

    def time_call(self, fn, *, spin_us):
        name, value = fn()
        self.order.append(name)
        return CallTime(device_us=value, issue_us=1.0)

    def latency_us(self, fn):
        name, value = fn()
        self.order.append(f"latency {name}")
        return value + 100.0


def _impl(name, values):
    return [lambda v=v: (name, v) for v in values]


def test_measure_interleaves_in_random_order_and_rotates_inputs():
    timer = ScriptedTimer()
    settings = TimingSettings(
        warmup=1, min_trials=20, max_trials=20, target_rse=0.0, latency_rounds=0
    )
    run = measure({"a": _impl("a", [1.0, 2.0, 3.0]), "b": _impl("b", [4.0] * 3)},
                  timer=timer, settings=settings, rng=random.Random(0))
    timed = timer.order[6:]  # after 3 warm-up calls each
    pairs = [tuple(timed[i:i + 2]) for i in range(0, len(timed), 2)]
    assert {("a", "b"), ("b", "a")} == set(pairs)  # both orders occur
    assert run.trials == 20 and run.stop == "max_trials"
    assert run.stats["a"].median_us == 2.0  # input sets 0, 1, 2 rotated
    assert run.stats["b"].n == 20
    assert run.busy_s["a"] == pytest.approx((6.0 + 40.0 - 1.0 * 0) / 1e6, rel=0.1)


def test_before_hook_prepares_every_timed_call_and_no_warmup():
    timer, seen = ScriptedTimer(), []

    def before(name, index, trial):
        seen.append((name, index, trial))
        timer.order.append(f"before {name}")

    settings = TimingSettings(
        warmup=2, min_trials=7, max_trials=7, target_rse=0.0, latency_rounds=0
    )
    measure({"a": _impl("a", [1.0, 2.0, 3.0]), "b": _impl("b", [4.0] * 3)},
            timer=timer, settings=settings, rng=random.Random(1), before=before)
    assert timer.order[:12] == ["a"] * 6 + ["b"] * 6  # warm-up: no preparation
    timed = timer.order[12:]
    assert all(timed[i] == f"before {timed[i + 1]}" for i in range(0, len(timed), 2))
    assert sorted(seen) == sorted((n, t % 3, t) for t in range(7) for n in "ab")


def test_call_seeds_differ_per_trial_and_implementation():
    assert call_seed(5, 1, "candidate") == call_seed(5, 1, "candidate")
    assert len({call_seed(5, t, n) for t in range(50) for n in ("candidate", "sdpa")}) == 100


def test_measure_stops_when_converged():
    run = measure({"a": _impl("a", [5.0])}, timer=ScriptedTimer(),
                  settings=TimingSettings(warmup=0, min_trials=5, max_trials=1000,
                                          latency_rounds=0),
                  rng=random.Random(0))
    assert run.stop == "converged" and run.trials == 5


def test_measure_stops_at_time_cap():
    ticks = iter(range(10_000))
    noisy = [1.0, 50.0, 100.0]
    run = measure({"a": _impl("a", noisy)}, timer=ScriptedTimer(),
                  settings=TimingSettings(warmup=0, min_trials=3, max_trials=1000, time_cap_s=10,
                                           latency_rounds=0),
                  rng=random.Random(0), clock=lambda: float(next(ticks)))
    assert run.stop == "time_cap" and run.trials < 20


def test_perf_counter_timer_measures_microseconds():
    import time

    call = PerfCounterTimer().time_call(lambda: time.sleep(0.01))
    assert 9_000 < call.device_us < 200_000
    assert call.issue_us == call.device_us and call.hidden  # on the CPU, one figure


class SpinTimer:
    """A GPU-like timer: a call's host issue work is hidden only by a longer spin.

    ``issue`` maps a name to its host issue time (us); a polluted call's device time
    includes the host work the spin did not cover, as CUDA events around it would.
    """

    def __init__(self, issue):
        self.issue = issue
        self.spins: list[tuple[str, float]] = []

    def time_call(self, fn, *, spin_us):
        name, device = fn()
        self.spins.append((name, spin_us))
        hidden = spin_us > self.issue[name]
        polluted = device if hidden else device + self.issue[name] - spin_us
        return CallTime(device_us=polluted, issue_us=self.issue[name], hidden=hidden)

    def latency_us(self, fn):
        name, device = fn()
        return device + self.issue[name]


def test_device_time_excludes_host_issue_work_and_latency_includes_it():
    timer = SpinTimer({"fast_host": 10.0, "slow_host": 300.0})
    settings = TimingSettings(warmup=1, min_trials=10, max_trials=10, target_rse=0.0,
                              spin_min_us=50.0, spin_factor=2.0)
    impls = {"fast_host": _impl("fast_host", [20.0] * 3),
             "slow_host": _impl("slow_host", [20.0] * 3)}
    run = measure(impls, timer=timer, settings=settings, rng=random.Random(0))
    # the spin is sized from warm-up issue times: 50 + 2 x issue
    assert run.spin_us == {"fast_host": 70.0, "slow_host": 650.0}
    assert run.stats["fast_host"].median_us == run.stats["slow_host"].median_us == 20.0
    assert run.latency["slow_host"].median_us - run.latency["fast_host"].median_us == 290.0
    assert run.issue["slow_host"].median_us == 300.0
    assert run.polluted == {"fast_host": 0, "slow_host": 0}


def test_a_call_whose_issue_work_outlasts_the_spin_is_discarded_and_the_spin_grows():
    timer = SpinTimer({"a": 10.0})
    settings = TimingSettings(warmup=1, min_trials=8, max_trials=8, target_rse=0.0,
                              spin_min_us=50.0, spin_factor=2.0, latency_rounds=0)
    calls = _impl("a", [20.0] * 3)
    run_timer = measure({"a": calls}, timer=timer, settings=settings, rng=random.Random(0))
    assert run_timer.polluted["a"] == 0
    timer.issue["a"] = 500.0  # the host slows down after warm-up (sized for 10 us)
    timer.spins.clear()
    settings = TimingSettings(warmup=0, min_trials=8, max_trials=8, target_rse=0.0,
                              spin_min_us=50.0, spin_factor=2.0, latency_rounds=0)
    run = measure({"a": calls}, timer=timer, settings=settings, rng=random.Random(0))
    spins = [s for _, s in timer.spins]
    assert spins[:2] == [50.0, 1000.0]  # doubled past the issue time after the first pollution
    assert run.polluted["a"] == 1
    assert run.stats["a"].median_us == 20.0 and run.stats["a"].n == 7  # polluted call left out


def test_no_hidden_call_at_all_falls_back_to_the_polluted_figures():
    timer = SpinTimer({"a": 1e9})  # no spin can hide it
    settings = TimingSettings(warmup=0, min_trials=4, max_trials=4, target_rse=0.0,
                              spin_max_us=100.0, latency_rounds=0)
    run = measure({"a": _impl("a", [20.0])}, timer=timer, settings=settings, rng=random.Random(0))
    assert run.polluted["a"] == 4 and run.stats["a"].n == 4
    assert run.stats["a"].median_us > 1e8  # reported as it is, never as a clean figure
    assert run.stop != "converged"


def test_the_first_warm_up_call_is_recorded_apart_and_never_timed():
    # a just-in-time compile (FlashAttention-4's) on first use: its cost is recorded as
    # first_call_ms and lands in no timed figure
    import time

    compiled = set()

    def impl(name, compile_s):
        def call():
            if name not in compiled:
                compiled.add(name)
                time.sleep(compile_s)
            time.sleep(0.001)
        return [call]

    settings = TimingSettings(warmup=2, min_trials=5, max_trials=5, latency_rounds=3)
    run = measure({"jit": impl("jit", 0.2), "plain": impl("plain", 0.0)},
                  timer=PerfCounterTimer(), settings=settings, rng=random.Random(0))
    assert run.first_call_ms["jit"] >= 200.0
    assert run.stats["jit"].max_us < 200_000 and run.latency["jit"].max_us < 200_000
    assert run.first_call_ms["plain"] < 200.0


def test_an_upstreams_probe_call_is_its_recorded_first_call(monkeypatch):
    # the worker calls each upstream once before timing it (does it run this scenario?): a
    # just-in-time compile (FA4's) lands in that call, so that call is the one recorded
    import dataclasses
    import time

    from evals.harness.targets import get_target
    from evals.harness.worker.serve import Worker

    target = get_target("cpu_attention")
    sdpa = target.upstream("sdpa")
    compiled: set[int] = set()
    real_prepare = sdpa.prepare

    def slow_first(inputs):
        call = real_prepare(inputs)

        def run():
            if not compiled:
                compiled.add(1)
                time.sleep(0.3)  # the compile
            return call()

        return run

    monkeypatch.setattr(sdpa, "prepare", slow_first)
    scenario = target.load_suite("smoke").scenarios[0]
    settings = dataclasses.replace(target.timing, min_trials=3, max_trials=3, time_cap_s=0.5)
    reply, _ = Worker(target).time({
        "scenario": scenario.to_json(), "seeds": [1, 2], "candidate": False,
        "upstreams": ["sdpa"], "settings": dataclasses.asdict(settings), "rng_seed": 3,
    })  # fmt: skip
    assert reply["first_call_ms"]["sdpa"] >= 300.0
    assert reply["stats"]["sdpa"]["median_us"] < 300_000.0  # the compile is in no figure
