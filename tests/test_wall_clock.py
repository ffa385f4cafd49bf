"""The parent's own clock on batches of candidate calls (``evals.harness.clock_checks.wall_clock``).

The decision with fabricated figures, the batch sizing and the second round on a fake clock,
the worker's side of a batch (fresh queries, digests, handing over outputs), an honest run
through the CLI, and hostile workers: a timer reporting a tenth of the truth, batches that
skip their work, outputs computed only when asked for, a no-op slowed to shrink the figure.
"""

import json
import stat
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from evals.harness import Code, RunSettings, evaluate
from evals.harness.clock_checks import (
    channel_cost,
    digest,
    query_flips,
    round_audit,
    wall_check,
    wall_clock,
    wall_reading,
    wall_verify,
)
from evals.harness.clock_checks.wall_reading import Batch, bound_us, judge, read
from evals.harness.clock_checks.wall_settings import CPU_WALL, GPU_WALL
from evals.harness.measurement.timing import TimingStats
from evals.harness.scenarios import Scenario
from evals.harness.targets import get_target
from evals.harness.verdict import record as verdict_module
from evals.harness.verdict.record import ScenarioResult
from evals.harness.worker.serve import CandidateError, WallBatches
from evals.harness.worker_link import channel
from evals.harness.worker_link import worker_client as worker_client_module
from evals.harness.worker_link.session import Tally
from tests.helpers import ROOT, START_CPU, check_held, failures_of, run_harness


def _stats(median):
    return TimingStats(median_us=median, mad_us=0.0, min_us=median, max_us=median, rse=0.0, n=9)


def _reading(per_call_us, calls=40):
    return read([Batch(calls, wall_s=per_call_us * calls / 1e6 + 1e-4, ping_s=1e-4)])


# --- the decision, on fabricated figures -----------------------------------------------------


def test_ping_is_subtracted_and_the_best_batch_counts():
    batches = [
        Batch(10, wall_s=0.0016, ping_s=0.0003, worker_s=0.0012),  # (1600 - 200) / 10 = 140
        Batch(10, wall_s=0.0013, ping_s=0.0002, worker_s=0.0010),  # (1300 - 200) / 10 = 110
        Batch(20, wall_s=0.0030, ping_s=0.0009),  # (3000 - 200) / 20 = 140
    ]
    reading = read(batches)
    # the smallest ping is subtracted from every batch: it subtracts the least
    assert reading.ping_us == pytest.approx(200.0)
    assert reading.per_call_us == pytest.approx(110.0)
    assert reading.best_calls == 10 and reading.calls == 40 and reading.batches == 3
    assert reading.worker_us == pytest.approx(100.0)  # the worker's own figure, for the record
    # a ping larger than the batch cannot make the time negative
    assert read([Batch(2, wall_s=1e-4, ping_s=3e-4)]).per_call_us == 0.0
    with pytest.raises(ValueError):
        read([])


@pytest.mark.parametrize(
    ("per_call_us", "reported_us", "passes"),
    [
        (95.0, 95.0, True),
        (140.0, 100.0, True),  # back to back: within 2.5 x 100 + 2 + 400 / 40 calls
        (261.0, 100.0, True),
        (263.0, 100.0, False),  # a timer that hid more than 60% of the call
        (812.0, 95.0, False),  # a tenth of the truth reported
        (1.0, 1000.0, True),  # one-sided: faster than reported is never a mismatch
    ],
)
def test_cpu_decision(per_call_us, reported_us, passes):
    failure = judge(_reading(per_call_us), reported_us, CPU_WALL)
    assert (failure is None) is passes
    if not passes:
        assert failure.code == Code.TIMING_MISMATCH
        assert f"the parent's clock saw {per_call_us:.0f} us per call" in failure.reason
        assert f"the worker reported {reported_us:.0f} us" in failure.reason


def test_gpu_decision_is_one_sided_and_honours_host_bound_calls():
    # back to back, L2 stays warm: the batch may beat the cold-L2 device time by far
    assert judge(_reading(40.0), wall_reading.reported_us(_stats(100.0), _stats(15.0)),
                 GPU_WALL) is None
    # a host-bound call: the device is idle most of the time, the issue time explains U
    reported = wall_reading.reported_us(_stats(8.0), _stats(40.0), serial=True)
    assert reported == 48.0 and bound_us(reported, GPU_WALL, 40) == 64.5
    assert judge(_reading(45.0), reported, GPU_WALL) is None
    assert judge(_reading(120.0), reported, GPU_WALL).code == Code.TIMING_MISMATCH
    # a call that synchronises: issue and device time follow each other (FA3 on a ragged
    # KV cache on the H200: 469 us device + 163 us issue, 665 us per call back to back)
    serial = wall_reading.reported_us(_stats(469.0), _stats(163.0), serial=True)
    assert judge(_reading(665.0), serial, GPU_WALL) is None
    assert judge(_reading(665.0), wall_reading.reported_us(_stats(469.0), _stats(163.0)),
                 GPU_WALL).code == Code.TIMING_MISMATCH  # what max() alone said
    # a timer that reports a tenth of each call is still caught with the sum
    assert judge(_reading(469.0), wall_reading.reported_us(_stats(46.9), _stats(16.3),
                 serial=True), GPU_WALL).code == Code.TIMING_MISMATCH
    # on the CPU the issue time is the work: the larger of the two, never the sum
    assert wall_reading.reported_us(_stats(100.0), _stats(100.0)) == 100.0
    # the bound scales with the call: the per-request overhead is spread over the batch
    assert bound_us(100.0, CPU_WALL, 2) == 250.0 + 2.0 + 200.0
    assert bound_us(100.0, CPU_WALL, 400) == 250.0 + 2.0 + 1.0
    assert bound_us(10.0, GPU_WALL, 200) == 12.5 + 2.0 + 0.5  # no fixed 20 us on 10 us calls


def test_batch_sizes_stay_within_their_bounds():
    assert wall_reading.calls_for(50.0, CPU_WALL) == 40  # 2 ms of 50 us calls
    assert wall_reading.calls_for(50.0, GPU_WALL) == 100  # 5 ms
    assert wall_reading.calls_for(360_000.0, CPU_WALL) == CPU_WALL.min_calls
    assert wall_reading.calls_for(0.0, GPU_WALL) == GPU_WALL.max_calls
    # at most the outputs a batch may keep for the parent to verify
    assert wall_reading.calls_for(50.0, CPU_WALL, max_calls=7) == 7
    assert wall_reading.calls_for(50.0, CPU_WALL, max_calls=1) == 1


# --- batches on a fake clock -----------------------------------------------------------------


class FakeWorker:
    """Answers ``wall`` requests on a fake clock: ``overhead_us`` per request, ``true_us`` per
    call (plus ``extra_us`` per call while ``slow_batches`` last: load)."""

    def __init__(self, true_us, overhead_us=300.0, slow_batches=0, extra_us=0.0):
        self.now, self.true_us, self.overhead_us = 0.0, true_us, overhead_us
        self.slow_batches, self.extra_us = slow_batches, extra_us
        self.requests = []

    def clock(self):
        return self.now

    def request(self, header, timeout_s=None):
        self.requests.append(header)
        n = header.get("n", 0)
        per_call = self.true_us + (self.extra_us if self.slow_batches > 0 else 0.0)
        if n:
            self.slow_batches -= 1
        self.now += (self.overhead_us + n * per_call) / 1e6
        return {"ok": True, "batch_s": n * per_call / 1e6, "digests": ["0"] * n}, b""


CHANNEL = wall_clock.Plan(ping_s=300e-6)
"""The fake worker's request overhead, as the parent's own channel measurement would give it."""


def test_round_sizes_batches_from_the_parent_reading_and_subtracts_the_channel():
    worker = FakeWorker(true_us=50.0)
    batches = wall_clock.run_round(worker, 50.0, CPU_WALL, plan=CHANNEL, clock=worker.clock)
    # a small first batch, then growing at most 4-fold to ~2 ms
    assert [b.calls for b in batches] == [2, 8, 32] + [40] * 5
    assert read(batches).per_call_us == pytest.approx(50.0)
    # the round's digest vector first (untimed), then per batch a no-op and the batch (timed)
    kinds = ["warm" if "warm" in r else "ping" if r["n"] == 0 else "batch"
             for r in worker.requests]
    assert kinds == ["warm"] + ["ping", "batch"] * len(batches)


def test_every_batch_sends_fresh_flip_offsets_for_each_call():
    worker = FakeWorker(true_us=50.0)
    plan = wall_clock.Plan(ping_s=300e-6, q_numel=1000)
    batches = wall_clock.run_round(worker, 50.0, CPU_WALL, plan=plan, clock=worker.clock)
    sent = [r["shifts"] for r in worker.requests if r.get("n")]
    assert [len(s) for s in sent] == [b.calls for b in batches]
    assert all(0 <= x <= 1000 for s in sent for x in s)
    assert len({tuple(s) for s in sent}) == len(sent)  # other offsets in every batch
    assert all(r["shifts"] == [] for r in worker.requests if r.get("n") and not plan.q_numel)


def test_a_call_far_slower_than_reported_never_runs_a_long_batch():
    # reported 5 us, true 5 ms: sized from the report alone, a batch would be 1000 calls (5 s)
    worker = FakeWorker(true_us=5000.0)
    batches = wall_clock.run_round(worker, 5.0, CPU_WALL, plan=CHANNEL, clock=worker.clock)
    assert max(b.calls for b in batches) == 2
    assert worker.now < 2 * CPU_WALL.budget_s


def test_a_slowed_no_op_cannot_shrink_the_figure():
    # the worker's own no-op takes 50 ms: subtracted, it would bring U to 0; the parent
    # subtracts only the round trip it measured on its own channel
    class SlowNoOp(FakeWorker):
        def request(self, header, timeout_s=None):
            answer = super().request(header, timeout_s)
            if header.get("n") == 0 and "warm" not in header:
                self.now += 0.05
            return answer

    worker = SlowNoOp(true_us=50.0)
    batches = wall_clock.run_round(worker, 5.0, CPU_WALL, plan=CHANNEL, clock=worker.clock)
    reading = wall_reading.conclude(batches, 5.0, CPU_WALL, None)
    assert reading.per_call_us == pytest.approx(50.0) and reading.best_calls >= 40
    assert min(b.worker_ping_s for b in batches) >= 0.05  # kept for the record only
    assert judge(reading, 5.0, CPU_WALL).code == Code.TIMING_MISMATCH


def test_the_parents_flip_cost_is_taken_off_each_batch():
    class Flips:
        def __call__(self, *, calls, shifts, digest_seed, digests):
            return 0.0

        def flip_cost(self, calls):
            return 20e-6 * calls

    worker = FakeWorker(true_us=120.0)
    plan = wall_clock.Plan(ping_s=300e-6, verify=Flips(), q_numel=64)
    batches = wall_clock.run_round(worker, 100.0, CPU_WALL, plan=plan, clock=worker.clock)
    assert read(batches).per_call_us == pytest.approx(100.0)


def test_only_batches_of_the_planned_size_decide():
    # a 2-call batch carries the request's overhead and the allowance for it (200 us a call):
    # the figure comes from the batches sized for the calls, whose allowance is small
    small = Batch(2, wall_s=2 * 100e-6 + 300e-6, ping_s=300e-6)  # 100 us a call
    large = Batch(40, wall_s=40 * 100e-6 + 300e-6, ping_s=300e-6)
    assert judge(read([small]), 1.0, CPU_WALL) is None  # alone, the lie fits its allowance
    reading = wall_reading.conclude([small, large], 1.0, CPU_WALL, None)
    assert reading.best_calls == 40
    assert judge(reading, 1.0, CPU_WALL).code == Code.TIMING_MISMATCH


def _first_round(reported, *, parent_sized):
    """The first round's batches on a worker whose requests cost 200 us past the round trip."""
    worker = FakeWorker(true_us=20.0, overhead_us=500.0)
    plan = wall_clock.Plan(ping_s=300e-6, parent_sized=parent_sized)
    measured = wall_clock.measure(worker, reported, CPU_WALL, plan=plan, clock=worker.clock)
    return measured.first_round


def test_a_cpu_figures_batches_are_sized_without_the_report():
    # back to back a call reads 20 us and what the round trip leaves of a request's overhead,
    # under the timing loop's 40 us: sized from the reports, a forge claiming 5/7 of them ran
    # longer batches, which spread the overhead thinner, and read faster than its honest twin
    honest, forged = (_first_round(r, parent_sized=False) for r in (40.0, 40.0 * 5 / 7))
    assert read(forged).per_call_us < 0.96 * read(honest).per_call_us
    honest, forged = (_first_round(r, parent_sized=True) for r in (40.0, 40.0 * 5 / 7))
    assert [b.calls for b in forged] == [b.calls for b in honest]
    assert read(forged).per_call_us == read(honest).per_call_us


def test_a_slow_call_is_one_batch_within_the_budget():
    worker = FakeWorker(true_us=360_000.0)
    batches = wall_clock.run_round(worker, 360_000.0, CPU_WALL, plan=CHANNEL,
                                   clock=worker.clock)
    assert [b.calls for b in batches] == [2]


def _session(worker, device="cpu"):
    target = SimpleNamespace(
        device=device,
        limits=SimpleNamespace(call_timeout_s=60.0),
        expected_output=lambda scenario: SimpleNamespace(shape=(4, 4), dtype=torch.float32),
    )
    return SimpleNamespace(target=target, client=worker, seed=1, tally=Tally())


class PassingVerifier:
    """Stands in for the batch verifier on a fake worker (its outputs are not real)."""

    def __init__(self, *args, **kwargs):
        self.verified, self.seconds, self.parts = 0, 0.0, {"wall_reference": 0.5}

    q_numel = 0

    def __call__(self, *, calls, shifts, digest_seed, digests):
        assert len(digests) == calls
        self.verified += 1
        return 0.0

    def flip_cost(self, calls):
        return 0.0

    def settle(self):
        pass

    def describe(self):
        return f"{self.verified} verified"


@pytest.fixture
def fake_verification(monkeypatch):
    """The fake worker's channel costs the fake clock's 300 us; its outputs are not checked."""
    monkeypatch.setattr(wall_check, "BatchVerifier", PassingVerifier)
    monkeypatch.setattr(channel_cost, "round_trip_s", lambda tries=24: 300e-6)


def _result(device_us, issue_us=None):
    result = ScenarioResult(Scenario("s", {}))
    result.times = {"candidate": _stats(device_us)}
    if issue_us is not None:
        result.issue = {"candidate": _stats(issue_us)}
    return result


def test_check_records_the_parents_figure_and_drops_the_inputs(fake_verification):
    worker = FakeWorker(true_us=120.0)
    result = _result(100.0, 100.0)
    failure = wall_check.check(_session(worker), result.scenario, result, clock=worker.clock)
    assert failure is None
    assert result.checks["wall_clock"].startswith("passed: the parent's clock saw 120.0 us")
    assert result.timing["wall_us"] == pytest.approx(120.0)
    assert result.timing["wall"]["reported_us"] == 100.0
    assert result.timing["wall"]["rounds"] == 1
    assert result.timing["wall"]["bound_us"] == bound_us(100.0, CPU_WALL, 17)  # 2 ms of 120 us
    assert result.seconds["wall_clock"] >= 0.0
    assert result.seconds["wall_reference"] == 0.5  # the verifier's parts, kept per scenario
    assert "scenario" in worker.requests[0] and worker.requests[-1] == {"op": "wall", "drop": True}


def _scenario():
    return get_target("cpu_attention").load_suite("smoke").scenarios[1]


class StubWorker:
    """The worker's side of ``WallBatches``: the CPU target, a call that notes its q."""

    def __init__(self, fail_at=None):
        self.target = get_target("cpu_attention")
        self.seen, self.keys, self.fail_at = [], [], fail_at

    def prepare(self, inputs):
        def call():
            if len(self.seen) == self.fail_at:
                raise RuntimeError("boom")
            self.seen.append(inputs["q"].clone())  # flipped in place: the values this call saw
            self.keys.append(inputs["k"])
            return inputs["q"] * 2

        return call


def _batch(n, seed=11, numel=None, digest_seed=1):
    return {"op": "wall", "n": n, "digest_seed": digest_seed,
            "shifts": query_flips.shifts(seed, n, numel)}


def test_every_call_of_a_batch_gets_its_own_fresh_query():
    scenario = _scenario()
    stub = StubWorker()
    wall = WallBatches(stub)
    wall.handle({"op": "wall", "scenario": scenario.to_json(), "seeds": [3], "mask_seed": 4})
    base = wall.sets[0]["q"].clone()
    answer, _ = wall.handle({"op": "wall", "n": 0})  # the no-op: no call
    assert answer["n"] == 0 and stub.seen == []
    wall.handle(_batch(5, numel=base.numel()))
    for i, q in enumerate(stub.seen):
        assert not torch.equal(q, base) and all(not torch.equal(q, p) for p in stub.seen[:i])
        assert torch.equal(q.abs(), base.abs())  # only signs flipped: q's distribution kept
    wall.handle(_batch(5, seed=12, numel=base.numel()))  # the next batch: other queries
    assert all(not torch.equal(a, b) for a, b in zip(stub.seen[:5], stub.seen[5:], strict=True))
    wall.handle({"op": "wall", "drop": True})
    assert wall.sets == [] and wall.calls == [] and wall.flips == []


def test_the_parent_rebuilds_the_q_a_batch_call_saw():
    scenario, seeds = _scenario(), [5, 6]
    stub = StubWorker()
    wall = WallBatches(stub)
    wall.handle({"op": "wall", "scenario": scenario.to_json(), "seeds": seeds, "mask_seed": 9})
    request = _batch(4, numel=wall.sets[0]["q"].numel())
    wall.handle(request)
    session = SimpleNamespace(target=stub.target, seed=1)
    verifier = wall_verify.BatchVerifier(session, scenario, seeds, key="wall_clock",
                                         mask_seed=9)
    for index, seen in enumerate(stub.seen):
        assert torch.equal(verifier._inputs(index, request["shifts"])["q"], seen)
    other = wall_verify.BatchVerifier(session, scenario, seeds, key="wall_clock", mask_seed=8)
    assert not torch.equal(other._inputs(0, request["shifts"])["q"], stub.seen[0])


def test_the_parent_times_digests_on_distinct_copies_as_a_batch_has_them(monkeypatch):
    # one output repeated stays in cache and is digested cheaper than a batch of distinct
    # outputs: on the H200 that under-subtraction rejected FA3 itself on large prefills
    seen = []
    monkeypatch.setattr(wall_verify, "compute_digests",
                        lambda batch, seed: seen.append({o.data_ptr() for o in batch}))
    session = SimpleNamespace(target=None, seed=1)
    verifier = wall_verify.BatchVerifier(session, _scenario(), [5], key="wall_clock")
    small = torch.zeros(1000)
    verifier._digest_cost(small, 40, 3)
    assert [len(s) for s in seen] == [40, 40, 40]  # every call its own copy
    seen.clear()
    big = torch.zeros(12 << 20)  # 48 MiB: three copies exceed the cache bound
    verifier._digest_cost(big, 16, 3)
    assert [len(s) for s in seen] == [3, 3, 3]


def test_the_parent_times_the_flips_on_every_set_in_turn_as_a_batch_does(monkeypatch):
    # one set's q flipped again and again stays in cache: subtracted too cheaply where the
    # batch's sets do not fit there together (a k=1 scenario rejected beside two CPU hogs)
    stub = StubWorker()
    session = SimpleNamespace(target=stub.target, seed=1)
    verifier = wall_verify.BatchVerifier(session, _scenario(), [5, 6, 7], key="wall_clock",
                                         mask_seed=9)
    flipped = []
    real_flip = query_flips.flip
    monkeypatch.setattr(query_flips, "flip",
                        lambda q, *rest: flipped.append(q.data_ptr()) or real_flip(q, *rest))
    assert verifier.flip_cost(10) > 0
    assert len(flipped) >= 8 and len(set(flipped)) == 3
    assert set(verifier.parts) == {"wall_inputs", "wall_flip_timing"}  # where the time went
    assert 0 < verifier.parts["wall_flip_timing"] <= verifier.seconds


def test_batches_run_the_timing_rounds_own_input_sets_in_turn():
    # the same work as the timed calls: the timing round's sets (a ragged KV cache's lengths
    # come from its seeds), rotated, each call with its own fresh q
    scenario, seeds = _scenario(), [5, 6, 7]
    stub = StubWorker()
    wall = WallBatches(stub)
    wall.handle({"op": "wall", "scenario": scenario.to_json(), "seeds": seeds})
    timing_sets = stub.target.make_timing_inputs(scenario, seeds)
    assert len(wall.sets) == 3
    for ours, theirs in zip(wall.sets, timing_sets, strict=True):
        assert torch.equal(ours["k"], theirs["k"]) and torch.equal(ours["v"], theirs["v"])
    wall.handle(_batch(6, numel=wall.sets[0]["q"].numel()))
    assert [k.data_ptr() for k in stub.keys] == [s["k"].data_ptr() for s in wall.sets] * 2
    assert len({tuple(q.flatten().tolist()) for q in stub.seen}) == 6


def test_a_batch_without_its_offsets_is_a_harness_error():
    wall = WallBatches(StubWorker())
    wall.handle({"op": "wall", "scenario": _scenario().to_json(), "seeds": [3]})
    with pytest.raises(CandidateError) as info:
        wall.handle({"op": "wall", "n": 3, "digest_seed": 1})
    assert info.value.failure.code == Code.HARNESS_ERROR


def test_the_check_sends_the_timing_rounds_seeds(fake_verification):
    worker = FakeWorker(true_us=100.0)
    result = _result(100.0, 100.0)
    wall_check.check(_session(worker), result.scenario, result, seeds=[4, 5, 6],
                     clock=worker.clock)
    assert worker.requests[0]["seeds"] == [4, 5, 6]


def test_a_failing_call_in_a_batch_is_the_candidates_and_drops_the_inputs():
    wall = WallBatches(StubWorker(fail_at=1))
    wall.handle({"op": "wall", "scenario": _scenario().to_json(), "seeds": [3]})
    numel = wall.sets[0]["q"].numel()
    with pytest.raises(CandidateError) as info:
        wall.handle(_batch(3, numel=numel))
    assert info.value.failure.code == Code.EXCEPTION and "boom" in info.value.failure.reason
    assert wall.sets == [] and wall.calls == []
    with pytest.raises(CandidateError):  # nothing prepared: a harness error, said so
        wall.handle(_batch(3, numel=numel))


def test_a_burst_of_load_passes_on_the_second_round(fake_verification):
    # every batch of the first round runs 4x slower; the second round, twice as long, does not
    worker = FakeWorker(true_us=100.0, slow_batches=CPU_WALL.batches, extra_us=300.0)
    result = _result(100.0, 100.0)
    assert wall_check.check(_session(worker), result.scenario, result, clock=worker.clock) is None
    assert result.timing["wall"]["rounds"] == 2
    assert result.timing["wall"]["batches"] == 3 * CPU_WALL.batches


def test_later_rounds_decide_the_check_and_never_the_figure(fake_verification):
    # the burst slows the first round 4-fold and the second passes; the figure stays the first
    # round's, as an upstream's has one round: a forged report fails rounds at will, and the
    # more batches, the smaller the fastest
    worker = FakeWorker(true_us=100.0, slow_batches=CPU_WALL.batches, extra_us=300.0)
    result = _result(100.0, 100.0)
    assert wall_check.check(_session(worker), result.scenario, result, clock=worker.clock) is None
    wall = result.timing["wall"]
    assert wall["rounds"] == 2 and wall["per_call_us"] == pytest.approx(100.0)
    assert wall["figure_batches"] == CPU_WALL.batches
    assert wall["figure_us"]["median_us"] == pytest.approx(400.0)
    assert wall["gross_us"]["median_us"] == pytest.approx(400.0)


def test_a_busy_hosts_wake_ups_pass_in_the_later_longer_rounds(fake_verification):
    # every request loses 5.7 ms to wake-ups the parent's own channel does not see: sized from
    # that reading, a round stays at a few calls a batch and fails; later rounds, sized from
    # the report and longer, spread the wake-ups thin and pass
    class Busy(FakeWorker):
        def request(self, header, timeout_s=None):
            self.now += 5.7e-3
            return super().request(header, timeout_s)

    worker = Busy(true_us=100.0)
    result = _result(100.0, 100.0)
    assert wall_check.check(_session(worker), result.scenario, result, clock=worker.clock) is None
    assert result.timing["wall"]["rounds"] >= 2
    assert result.timing["wall"]["best_calls"] > 40


def test_reported_times_too_small_fail_after_both_rounds(fake_verification):
    worker = FakeWorker(true_us=812.0)
    result = _result(95.0, 95.0)
    failure = wall_check.check(_session(worker), result.scenario, result, clock=worker.clock)
    assert failure is not None and failure.code == Code.TIMING_MISMATCH
    assert "saw 812 us per call" in failure.reason and "reported 95 us" in failure.reason
    assert result.checks["wall_clock"].startswith("failed: ")
    # every round failed; the later ones, sized from the report and longer, stop at max_s
    assert 2 <= result.timing["wall"]["rounds"] <= 1 + CPU_WALL.retries
    assert worker.now < CPU_WALL.max_s + 1.0
    assert worker.requests[-1] == {"op": "wall", "drop": True}


def test_a_contract_scenarios_unconfirmed_times_are_withheld_not_failed(fake_verification):
    # a contract scenario gates correctness only: a U its reports do not explain withholds its
    # speedups (no headline uses them) instead of rejecting an honest kernel whose few-key
    # calls cost less than a busy host adds to each batch call; a study scenario still fails
    worker = FakeWorker(true_us=812.0)
    result = _result(95.0, 95.0)
    result.scenario = Scenario("c", {}, contract=True)
    result.times["sdpa"] = _stats(190.0)
    assert wall_check.check(_session(worker), result.scenario, result, clock=worker.clock) is None
    assert result.checks["wall_clock"].startswith("not counted (a contract scenario")
    assert "saw 812 us per call" in result.timing["unverified"]
    assert result.speedup("sdpa") is None and result.to_json()["speedup"] == {"sdpa": None,
                                                                              "fastest": None}
    study = _result(95.0, 95.0)
    study.times["sdpa"] = _stats(190.0)
    passed = ScenarioResult(Scenario("c2", {}, contract=True), correct=True,
                            times={"candidate": _stats(100.0), "sdpa": _stats(300.0)})
    result.correct = study.correct = True
    agg = verdict_module.aggregates([study, result, passed], ["sdpa"])
    assert agg["contract"]["geomean_speedup"]["sdpa"] == pytest.approx(3.0)  # withheld: out
    assert agg["geomean_speedup"]["sdpa"] == pytest.approx(2.0)


def test_rounds_stop_after_max_s(fake_verification):
    # reported 1 us, true 200 ms: every batch is 2 calls, 0.4 s
    worker = FakeWorker(true_us=200_000.0)
    result = _result(1.0, 1.0)
    failure = wall_check.check(_session(worker), result.scenario, result, clock=worker.clock)
    assert failure is not None and failure.code == Code.TIMING_MISMATCH
    assert worker.now < CPU_WALL.max_s + 1.0


def test_an_untimed_scenario_is_skipped_and_says_so():
    result = ScenarioResult(Scenario("s", {}))
    assert wall_check.check(_session(None), result.scenario, result) is None
    assert result.checks["wall_clock"] == "skipped: the candidate was not timed"


# --- the real harness ------------------------------------------------------------------------


def test_honest_kernel_passes_the_wall_clock_check_through_the_cli(tmp_path):
    out = tmp_path / "bench.json"
    proc = run_harness("bench", "--target", "cpu_attention", "--kernel", str(START_CPU),
                       "--suite", "smoke", "--json", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text())
    for sc in doc["scenarios"]:
        if sc["covering"]:  # verified and probed, never timed
            assert "wall_clock" not in sc["checks"]
            continue
        assert check_held(sc, "wall_clock"), sc["checks"]
        wall, median = sc["timing"]["wall_us"], sc["times_us"]["candidate"]["median_us"]
        figures = sc["timing"]["wall"]
        assert figures["per_call_us"] == wall and figures["reported_us"] > 0
        assert wall <= figures["bound_us"] or "unverified" in sc["timing"]
        # the same calls on two clocks of the same run (a re-time may have replaced the
        # median since): far apart only if one of them is wrong
        assert wall > median / 10, (wall, median)
        assert figures["calls"] >= 2 and figures["ping_us"] > 0
        assert sc["seconds"]["wall_clock"] > 0  # its own phase, verification included
        # and where the verification's time went (the float64 reference check among it)
        assert 0 < sc["seconds"]["wall_reference"] < sc["seconds"]["wall_clock"]
    assert doc["timing"]["wall_clock_s"] > 0
    assert 0 < doc["timing"]["wall_reference_s"] < doc["timing"]["wall_clock_s"]
    assert "wall-clock check" in proc.stdout


FAKE_TIMER_WORKER = '''#!{python}
"""A candidate's worker whose timer reports a fiftieth of each call's time (test only)."""
import sys

sys.path.insert(0, {root!r})
from evals.harness.measurement import timing
from evals.harness.worker import serve as worker

args = sys.argv[1:]
assert args[:3] == ["-P", "-m", "evals.worker_entry"], args
argv = ["worker", *args[3:]]
if argv[3] != "-":  # the candidate's worker, not the upstreams'
    honest = timing.PerfCounterTimer.time_call

    def fiftieth(self, fn, *, spin_us=0.0):
        call = honest(self, fn, spin_us=spin_us)
        return timing.CallTime(device_us=call.device_us / 50, issue_us=call.issue_us / 50)

    timing.PerfCounterTimer.time_call = fiftieth
from evals.harness.worker import startup
sys.exit(startup.main(argv))
'''


def _unaudited(session, scenario, request, timeout_s, on_answer):
    """A candidate timing round without the round audit, which on the CPU runs first."""
    header, _ = session.client.request(request, timeout_s=timeout_s)
    on_answer(header)
    return header, request


def _fake_timer_worker(tmp_path, monkeypatch):
    """Workers started from here on report a fiftieth of each call (FAKE_TIMER_WORKER)."""
    script = tmp_path / "fake_timer_worker"
    script.write_text(FAKE_TIMER_WORKER.format(python=sys.executable, root=str(ROOT)))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(worker_client_module, "sys", SimpleNamespace(executable=str(script)))


def test_a_worker_reporting_a_fiftieth_of_its_time_fails_the_round_audit(tmp_path, monkeypatch):
    # the round audit runs first on the CPU: the parent's clock on the timing round itself
    _fake_timer_worker(tmp_path, monkeypatch)
    settings = RunSettings("bench", "cpu_attention", START_CPU, suite="smoke",
                           scenario_ids=("smoke-bf16-d64-s96-h4k2-causal",))
    result = evaluate(settings).results[0]
    assert result.failure is not None and result.failure.code == Code.TIMING_MISMATCH, (
        result.failure)
    assert "a timing round of" in result.failure.reason


def test_a_worker_reporting_a_fiftieth_of_its_time_fails_the_wall_clock_check(
    tmp_path, monkeypatch
):
    """A timer faked inside the candidate's worker is caught by the parent's clock.

    No corpus kernel can do this: the static checks keep a kernel away from the timer (no
    Python C-API symbols, so no patching of the harness's Python; no dlopen/dlsym, file
    I/O, threads or raw system calls), so the hack is played here by the worker process
    itself, started by this test with its timer patched to report a fiftieth of each call.
    The wall-clock check is the defence in depth for a kernel that got past those checks.
    The same scenario, judged honestly in the same run, is the baseline: it passes. (A
    fiftieth, not a tenth: on the CPU the parent meters the worker's CPU time, which a busy
    host does not inflate, while the worker's timer runs on the wall clock, which it does: a
    tenth fell within 2.5x of the truth once the tests ran beside two other test runs.)
    """
    scenario = ("smoke-bf16-d64-s96-h4k2-causal",)
    settings = RunSettings("bench", "cpu_attention", START_CPU, suite="smoke",
                           scenario_ids=scenario)
    honest = evaluate(settings)
    assert honest.status == "ok", failures_of(honest)
    assert honest.results[0].checks["wall_clock"].startswith("passed")

    _fake_timer_worker(tmp_path, monkeypatch)
    monkeypatch.setattr(round_audit, "audited_round", _unaudited)  # the wall-clock check alone
    faked = evaluate(settings)
    result = faked.results[0]
    assert result.failure is not None and result.failure.code == Code.TIMING_MISMATCH, (
        result.failure)
    assert "the parent's clock saw" in result.failure.reason
    assert result.checks["wall_clock"].startswith("failed: ")
    assert result.timing["wall_us"] > 10 * result.times["candidate"].median_us


# --- the worker's side of a batch: digests, outputs handed over ------------------------------


def test_a_batch_commits_to_each_output_and_hands_over_only_those_chosen():
    stub = StubWorker()
    wall = WallBatches(stub)
    wall.handle({"op": "wall", "scenario": _scenario().to_json(), "seeds": [3]})
    answer, _ = wall.handle(_batch(4, numel=wall.sets[0]["q"].numel(), digest_seed=9))
    outputs = [q * 2 for q in stub.seen]
    assert answer["digests"] == digest.digests(outputs, 9)
    assert len(set(answer["digests"])) == 4  # every call its own output
    header, payload = wall.handle({"op": "wall", "outputs": [2]})
    (out,) = channel.unpack_tensors(header["tensors"], payload)
    assert torch.equal(out, outputs[2]) and digest.matches(out, answer["digests"][2], 9)
    assert not digest.matches(outputs[1], answer["digests"][2], 9)
    assert wall.kept == []  # the rest are dropped once the parent has chosen
    with pytest.raises(CandidateError) as info:  # nothing kept any more: the parent's error
        wall.handle({"op": "wall", "outputs": [0]})
    assert info.value.failure.code == Code.HARNESS_ERROR


def test_a_digest_tells_outputs_apart_and_survives_no_copy():
    out = torch.randn(2, 37, 3, 64).bfloat16()
    (d,) = digest.digests([out], 5)
    assert digest.matches(out.clone(), d, 5)
    nudged = out.clone()
    nudged[1, 5, 2, 7] += 0.5
    assert not digest.matches(nudged, d, 5)
    assert not digest.matches(out, d, 6)  # another seed
    nan = torch.full((4,), float("nan"))
    assert digest.matches(nan, digest.digests([nan], 1)[0], 1)  # the same NaN output
    assert not digest.matches(out, 0.0, 5)  # a number is no digest


def test_a_cpu_digest_binds_every_bit_not_only_a_projection():
    # two nudges, each far inside any tolerance, that cancel in a linear projection on the
    # seed's vector: a worker that committed to a guess could hit it this way; every bit
    # of a CPU output is bound, so neither these nor any single flipped bit match
    out = torch.randn(4096, dtype=torch.float32)
    (d,) = digest.digests([out], 3)
    vector = np.random.default_rng(3).standard_normal(out.numel())
    i, j = 10, 2000
    nudged = out.clone()
    nudged[i] += 1e-4 * vector[j]
    nudged[j] -= 1e-4 * vector[i]
    before = float(np.dot(out.double().numpy(), vector))
    after = float(np.dot(nudged.double().numpy(), vector))
    assert abs(after - before) < 1e-6 * np.abs(vector).sum()  # the projection barely moves
    assert not digest.matches(nudged, d, 3)
    bits = out.view(torch.int32)
    for where in (0, 1, 777, 4095):
        flipped = bits.clone()
        flipped[where] ^= 1  # the lowest mantissa bit
        assert not digest.matches(flipped.view(torch.float32), d, 3)


def test_device_digests_are_exact_sums_the_same_alone_or_in_a_batch():
    # the GPU path, run on CPU tensors: the worker reduces a batch stacked, the parent one
    # output alone; integer sums make them the same bytes, and a change in any run shows
    outs = [torch.randn(3, 50, 7).bfloat16() for _ in range(5)]

    def sums(batch):  # each output's run sums, as the bytes its digest hashes
        return [row.tobytes() for row in digest.device_sums(batch, 9).numpy()]

    together = sums(outs)
    alone = [sums([o])[0] for o in outs]
    assert together == alone and len(set(together)) == 5
    runs = -(-outs[0].numel() // digest.run_length(outs[0].numel()))
    assert len(together[0]) == 4 * runs  # int32 sums for 16-bit patterns
    extreme = torch.full((4096,), -32768, dtype=torch.int16).view(torch.bfloat16)
    weights = digest._weights(64, 9, extreme.device, 2).long()
    exact = (extreme.view(torch.int16).long().view(-1, 64) * weights).sum(-1)
    assert torch.equal(exact.int().long(), exact)  # no run overflows its int32 sum
    assert np.frombuffer(sums([extreme])[0], dtype=np.int32).tolist() == exact.tolist()
    changed = outs[2].clone()
    changed.view(-1)[-1] = -changed.view(-1)[-1]  # the last, padded run
    assert sums([changed])[0] != together[2]
    assert digest.run_length(1 << 18) == 64 and digest.run_length(1 << 25) == 8192


# --- hostile workers: what a candidate that took over its process could do ------------------

HOSTILE_WORKER = '''#!{python}
"""A candidate's worker taken over by its candidate (test only): {hack}."""
import sys

sys.path.insert(0, {root!r})
import torch
from evals.harness.measurement import timing
from evals.harness.worker import serve as worker
from evals.harness.worker import wall as worker_wall

args = sys.argv[1:]
assert args[:3] == ["-P", "-m", "evals.worker_entry"], args
argv = ["worker", *args[3:]]
HACK = {hack!r}
if argv[3] != "-":  # the candidate's worker, not the upstreams'
    honest_time = timing.PerfCounterTimer.time_call

    def tenth(self, fn, *, spin_us=0.0):
        call = honest_time(self, fn, spin_us=spin_us)
        return timing.CallTime(device_us=call.device_us / 10, issue_us=call.issue_us / 10)

    timing.PerfCounterTimer.time_call = tenth
    honest_handle = worker_wall.WallBatches.handle
    honest_commit = worker_wall.WallBatches._commit
    honest_prepare = worker_wall.WallBatches._prepare

    def skipping_prepare(self, scenario, req):
        honest_prepare(self, scenario, req)
        self.calls = [lambda: torch.zeros_like(self.sets[0]["q"]) for _ in self.calls]

    def ahead_prepare(self, scenario, req):
        # every set's output computed before any batch (untimed), handed back in the batches
        honest_prepare(self, scenario, req)
        ready = [call() for call in self.calls]
        self.calls = [lambda out=out: out.clone() for out in ready]

    def lazy_commit(self, outputs, digest_seed):
        self.real = list(self.calls)
        zeros = [torch.zeros_like(o) for o in outputs]
        return honest_commit(self, zeros, digest_seed)

    def lazy_handle(self, req):
        if "outputs" in req:  # compute the chosen ones now, outside the parent's batch
            self.kept = [self.real[i % len(self.real)]() for i in range(max(req["outputs"]) + 1)]
        return honest_handle(self, req)

    def short_handle(self, req):
        header, payload = honest_handle(self, req)
        if header.get("digests"):
            header["digests"] = header["digests"][:1]  # claims one call was made
        return header, payload

    if HACK == "skip":
        worker_wall.WallBatches._prepare = skipping_prepare
    elif HACK == "ahead":
        worker_wall.WallBatches._prepare = ahead_prepare
    elif HACK == "lazy":
        worker_wall.WallBatches._commit = lazy_commit
        worker_wall.WallBatches.handle = lazy_handle
    elif HACK == "short":
        worker_wall.WallBatches.handle = short_handle
from evals.harness.worker import startup
sys.exit(startup.main(argv))
'''

HOSTILE_CASES = [
    # (hack, code, text in the reason)
    ("skip", Code.STALE_RESULT, "of a wall-clock batch of"),
    ("ahead", Code.STALE_RESULT, "of a wall-clock batch of"),
    ("lazy", Code.STALE_RESULT, "another output than the one its batch committed to"),
    ("short", Code.TIMING_MISMATCH, "answered 1 digests"),
]


@pytest.mark.parametrize(("hack", "code", "text"), HOSTILE_CASES, ids=[c[0] for c in HOSTILE_CASES])
def test_a_worker_taken_over_by_its_candidate_cannot_pass_a_tenth_of_its_time(
    tmp_path, monkeypatch, hack, code, text
):
    """The candidate's process reports a tenth of each call and also games the batches.

    Played by the worker itself (started by this test, patched as a candidate that reached
    the worker's Python through libpython's C API could patch it): batches that skip their
    work, outputs computed before the batch (its queries are made inside it), outputs
    computed only once the parent has chosen them, a batch that claims fewer calls. Each is
    caught by what the parent checks itself, whatever the machine's load.
    """
    scenario = ("smoke-bf16-d64-s96-h4k2-causal",)
    settings = RunSettings("bench", "cpu_attention", START_CPU, suite="smoke",
                           scenario_ids=scenario)
    script = tmp_path / "hostile_worker"
    script.write_text(HOSTILE_WORKER.format(python=sys.executable, root=str(ROOT), hack=hack))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(worker_client_module, "sys", SimpleNamespace(executable=str(script)))
    monkeypatch.setattr(round_audit, "audited_round", _unaudited)  # the wall-clock check alone
    result = evaluate(settings).results[0]
    assert result.failure is not None and result.failure.code == code, result.failure
    assert text in result.failure.reason, result.failure.reason
    assert result.checks["wall_clock"].startswith("failed: ")


class _Forwarding:
    """A client whose worker side is a real ``WallBatches`` on the CPU target."""

    proc = None

    def __init__(self, right):
        self.target = get_target("cpu_attention")
        self.right, self.wall = right, WallBatches(self)

    def prepare(self, inputs):
        sdpa = self.target.upstream("sdpa").prepare(inputs)
        return sdpa if self.right else (lambda: inputs["q"] * 2)

    def request(self, header, timeout_s=None):
        return self.wall.handle(header)


@pytest.mark.parametrize("right", [True, False])
def test_batch_outputs_are_checked_after_the_worker_let_its_inputs_go(monkeypatch, right):
    # a large KV cache must never sit in both processes: the parent keeps the sets' queries
    # while the batches run and checks the outputs' accuracy once the worker dropped its sets
    client = _Forwarding(right)
    session = SimpleNamespace(target=client.target, client=client, seed=1, tally=Tally())
    checked = []
    real = wall_verify.check_sampled

    def spy(target, scenario, outs, inputs, *, seed):
        checked.append(client.wall.sets)
        return real(target, scenario, outs, inputs, seed=seed)

    monkeypatch.setattr(wall_verify, "check_sampled", spy)
    result = _result(1e5, 1e5)
    scenario = _scenario()
    result.scenario = scenario
    failure = wall_check.check(session, scenario, result, seeds=[4, 5, 6])
    assert checked and all(sets == [] for sets in checked)
    if right:
        assert failure is None, result.checks["wall_clock"]
    else:
        assert failure is not None and failure.code == Code.STALE_RESULT
        assert "was wrong" in failure.reason
