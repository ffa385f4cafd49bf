"""Null batches subtracted from gated ones (``clock_checks/null_batches.py``, ``worker/wall.py``).

U is the batch less the same batch of calls that do nothing, run in the upstreams' worker
while the candidate's is stopped; never the parts the parent timed on its own, whose excess
let a forge of 0.90 of each call pass on an H100 (session 41). The GPU runs are
``tests/gpu/test_gated_wall.py``.
"""

import contextlib
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from evals.harness import Code
from evals.harness.clock_checks import null_recheck, wall_clock
from evals.harness.clock_checks.gated_batch import Blocked, GatedLink
from evals.harness.clock_checks.null_batches import REPEATS, Kept, NullBatches
from evals.harness.clock_checks.wall_reading import Batch, conclude, judge
from evals.harness.clock_checks.wall_settings import GPU_GATED_WALL
from evals.harness.judging import judge_locked
from evals.harness.run_settings import RunSettings
from evals.harness.scenarios import Scenario
from evals.harness.targets import get_target
from evals.harness.verdict.record import ScenarioResult
from evals.harness.worker import gated as worker_gated
from evals.harness.worker.serve import CandidateError, WallBatches
from evals.harness.worker_link.worker_client import WorkerFailure


def test_a_null_batch_alone_is_subtracted_where_there_is_one():
    parts = Batch(calls=10, wall_s=0.010, ping_s=0.001, digest_s=0.002, flip_s=0.001)
    null = Batch(calls=10, wall_s=0.010, ping_s=0.001, digest_s=0.002, flip_s=0.001, null_s=0.003)
    assert parts.per_call_us(0.001) == pytest.approx(600.0)
    assert null.per_call_us(0.001) == pytest.approx(700.0)


class OverheadWorker:
    """Gated-like batches on a fake clock: ``fixed_us`` a request and ``extra_us`` a call
    (flips, digests) beside ``true_us`` of work a call."""

    def __init__(self, true_us, fixed_us=300.0, extra_us=10.0):
        self.now, self.true_us, self.fixed_us, self.extra_us = 0.0, true_us, fixed_us, extra_us

    def clock(self):
        return self.now

    def request(self, header, timeout_s=None):
        n = header.get("n", 0)
        self.now += (self.fixed_us + n * (self.true_us + self.extra_us)) / 1e6
        return {"ok": True, "batch_s": 0.0, "digests": ["0"] * n}, b""


class OverCharging:
    """The parent's own timing of a batch's digests: 60 us a call where the device spent 10."""

    q_numel = 0

    def __call__(self, *, calls, shifts, digest_seed, digests):
        return calls * 60e-6

    def flip_cost(self, calls):
        return 0.0


class FakeNull:
    """Null batches on the worker's own overheads (no work a call)."""

    def __init__(self, worker):
        self.worker, self.asked = worker, []

    def wall_s(self, calls):
        self.asked.append(calls)
        return (self.worker.fixed_us + calls * self.worker.extra_us) / 1e6


@pytest.mark.parametrize("null", [False, True])
def test_a_forge_that_over_subtracted_parts_let_pass_fails_against_the_null_batch(null):
    true_us, forged = 1000.0, 900.0  # a forge reporting 0.90 of each call
    worker = OverheadWorker(true_us)
    plan = wall_clock.Plan(ping_s=300e-6, verify=OverCharging(),
                           null=FakeNull(worker) if null else None)  # fmt: skip
    measured = wall_clock.measure(worker, forged, GPU_GATED_WALL, plan=plan, clock=worker.clock)
    batches = measured.batches
    reading = conclude(batches, forged, GPU_GATED_WALL, None)
    failure = judge(reading, forged, GPU_GATED_WALL)
    if null:
        assert reading.per_call_us == pytest.approx(true_us)
        assert failure is not None and failure.code == Code.TIMING_MISMATCH
        assert "null calls" in failure.reason and reading.to_json()["null_us"] > 0
    else:  # the parts' 50 us of excess a call take U under the truth, inside the bound
        assert reading.per_call_us == pytest.approx(true_us - 50.0)
        assert failure is None and "null_us" not in reading.to_json()


def test_an_honest_call_passes_against_the_null_batch():
    worker = OverheadWorker(1000.0)
    plan = wall_clock.Plan(ping_s=300e-6, verify=OverCharging(), null=FakeNull(worker))
    measured = wall_clock.measure(worker, 1000.0, GPU_GATED_WALL, plan=plan, clock=worker.clock)
    batches = measured.batches
    assert measured.rounds == 1
    assert judge(conclude(batches, 1000.0, GPU_GATED_WALL, None), 1000.0, GPU_GATED_WALL) is None
    assert all(b.null_s is not None for b in batches)


class SlowNull(FakeNull):
    """Null batches that take 50 ms of the parent's clock each size."""

    def wall_s(self, calls):
        self.worker.now += 0.05
        return super().wall_s(calls)


def test_the_null_batches_time_is_not_the_rounds_budget():
    sizes = []
    for null in (FakeNull, SlowNull):
        worker = OverheadWorker(25.0)
        plan = wall_clock.Plan(ping_s=300e-6, null=null(worker))
        batches = wall_clock.run_round(worker, 25.0, GPU_GATED_WALL, plan=plan,
                                       clock=worker.clock)  # fmt: skip
        sizes.append([b.calls for b in batches])
    assert sizes[0] == sizes[1] and sizes[0][-1] == GPU_GATED_WALL.max_calls


def test_a_ceiling_under_the_planned_size_leaves_the_sizing_batches_out():
    def batch(calls):  # a 23 us call; a null batch noisier by 50 us than the fastest batch
        overhead = 300e-6 + calls * 10e-6
        return Batch(calls, overhead + calls * 23e-6, 50e-6, null_s=overhead + 50e-6)

    batches = [batch(n) for n in (2, 8, 32, 64)]
    plan = wall_clock.Plan(gated=GatedLink(ceiling=64))
    uncapped = conclude(batches, 23.0, GPU_GATED_WALL, None)
    assert uncapped.best_calls == 2 and uncapped.per_call_us == 0.0  # all counted, U gone
    capped = conclude(batches, 23.0, GPU_GATED_WALL, wall_clock.most_calls(plan))
    assert capped.best_calls == 64 and capped.per_call_us == pytest.approx(23.0 - 50 / 64)


class Upstreams:
    """The upstreams' worker as the null batches see it; notes whether the candidate was
    stopped at each request."""

    def __init__(self, state):
        self.state, self.requests, self.proc = state, [], None
        self.started = 0

    def start(self):
        self.started += 1
        self.proc = type("Proc", (), {"poll": staticmethod(lambda: None)})()

    def request(self, header, timeout_s=None):  # starts a worker not running, as the real one
        if self.proc is None:
            self.start()
        self.requests.append((dict(header), self.state["paused"]))
        return {"ok": True}, b""


class Link:
    """A gated link whose batches take ``seconds`` in turn (or block)."""

    def __init__(self, seconds, blocked=False):
        self.seconds, self.blocked, self.headers = list(seconds), blocked, []

    def round_trip(self, client, header, offsets, timeout_s, meter):
        if self.blocked:
            raise Blocked()
        self.headers.append(header)
        assert client.state["paused"]
        return self.seconds.pop(0), {"ok": True}


def _nulls(seconds, blocked=False):
    state = {"paused": False}

    @contextlib.contextmanager
    def pause():
        state["paused"] = True
        try:
            yield
        finally:
            state["paused"] = False

    client = Upstreams(state)
    prepare = {"op": "wall", "impl": "null", "query": {"shape": [4], "dtype": "float32"}}
    nulls = NullBatches(client=client, pause=pause, prepare=prepare, q_numel=4, seed=7,
                        timeout_s=5.0, link=Link(seconds, blocked))  # fmt: skip
    return nulls, client


def test_null_batches_run_once_a_size_with_the_candidate_stopped_and_the_fastest_counts():
    nulls, client = _nulls([0.003, 0.002, 0.004, 0.010, 0.008, 0.009])
    assert nulls.wall_s(8) == 0.002
    assert nulls.wall_s(8) == 0.002  # kept: no more batches
    assert nulls.wall_s(32) == 0.008
    assert len(nulls.link.headers) == 2 * REPEATS
    assert [h["n"] for h in nulls.link.headers] == [8] * REPEATS + [32] * REPEATS
    assert all(len(h["shifts"]) == h["n"] for h in nulls.link.headers)
    assert client.started == 1  # the worker was not running yet
    kinds = [("impl" in h and "prepare") or ("warm" in h and "warm") for h, _ in client.requests]
    assert kinds == ["prepare", "warm"] and all(paused for _, paused in client.requests)
    nulls.drop()
    assert client.requests[-1][0] == {"op": "wall", "drop": True}


def test_a_null_batch_that_cannot_arm_is_the_harnesss_error_never_the_candidates():
    nulls, _ = _nulls([], blocked=True)
    with pytest.raises(WorkerFailure) as caught:
        nulls.wall_s(8)
    assert caught.value.failure.code == Code.HARNESS_ERROR


# --- the worker's side, on CPU tensors --------------------------------------------------------


class NullGate:
    def is_open(self, token):
        return False

    def queue(self, token, payload):
        payload.zero_()


class UpstreamsStub:
    """The upstreams' worker: no candidate loaded, a gate."""

    def __init__(self, ops=None):
        self.target = get_target("cpu_attention")
        self.gate, self.ops = NullGate(), ops


def _prepare(query):
    scenario = get_target("cpu_attention").load_suite("smoke").scenarios[1]
    return {"op": "wall", "scenario": scenario.to_json(), "seeds": [3, 4], "mask_seed": 4,
            "gated": True, "copies": 2, "impl": "null", "query": query}  # fmt: skip


def test_a_null_batch_runs_on_queries_alone_and_returns_fresh_outputs(monkeypatch):
    monkeypatch.setattr(worker_gated.torch.cuda, "synchronize", lambda: None)
    wall = WallBatches(UpstreamsStub())
    wall.handle(_prepare({"shape": [2, 3, 5], "dtype": "bfloat16"}))
    assert len(wall.sets) == 4 and all(set(s) == {"q"} for s in wall.sets)
    assert all(s["q"].shape == (2, 3, 5) and s["q"].dtype == torch.bfloat16 for s in wall.sets)
    spec = get_target("cpu_attention").expected_output(wall.scenario)
    first, second = wall.calls[0](), wall.calls[0]()
    assert first.shape == spec.shape and first.dtype == spec.dtype
    assert first.data_ptr() != second.data_ptr()
    armed, _ = wall.handle({"op": "wall", "n": 6, "digest_seed": 5, "gated": 9})
    done, _ = wall.handle({"op": "wall", "finish": True})
    assert armed["armed"] and done["n"] == 6


@pytest.mark.parametrize("query", [None, {"shape": [2], "dtype": "not_a_dtype"},
                                   {"shape": [2], "dtype": "Tensor"}])  # fmt: skip
def test_a_null_batch_without_a_usable_query_is_a_harness_error(query):
    wall = WallBatches(UpstreamsStub())
    with pytest.raises(CandidateError) as caught:
        wall.handle(_prepare(query))
    assert caught.value.failure.code == Code.HARNESS_ERROR


def test_a_worker_that_loaded_a_candidate_runs_no_null_batch():
    wall = WallBatches(UpstreamsStub(ops=object()))
    with pytest.raises(CandidateError, match="loaded a candidate"):
        wall.handle(_prepare({"shape": [2], "dtype": "float32"}))


@pytest.mark.parametrize(("name", "gated"), [("fa3_hopper", True), ("cpu_attention", False)])
def test_the_upstreams_worker_of_a_gated_gpu_target_is_given_a_gate(name, gated):
    settings = RunSettings("score", name, Path("k.cu"), suite="smoke")
    candidate, upstreams = judge_locked._workers(get_target(name), Path("lib.so"), settings)
    assert candidate.gated is gated and upstreams.gated is gated  # nothing started yet


# --- the null batches again once the candidate's process is gone (null_recheck.py) -----------


def _kept(late_s, *, contract=False, hog_us=120.0, reported=900.0):
    """A 1000 us call reported at 900 us (a forge), judged against null batches a hog lengthened
    by ``hog_us`` a call; the later null batches take ``late_s`` (seconds per size) in turn."""

    def batch(n):
        null = (300 + n * (10 + hog_us)) * 1e-6
        return Batch(n, (300 + n * 1010) * 1e-6, 50e-6, null_s=null)

    nulls, _ = _nulls(late_s)
    batches = tuple(batch(n) for n in (2, 5, 5, 5))
    kept = Kept("wall_clock", batches, reported, GPU_GATED_WALL, 128, nulls)
    result = ScenarioResult(Scenario("s", {}, contract=contract))
    result.timing["wall"] = {"per_call_us": 880.0}
    result.checks["wall_clock"] = "passed: ..."
    session = SimpleNamespace(null_rechecks={"s": [kept]})
    return session, result, nulls


def test_a_forge_a_lengthened_null_let_through_fails_on_the_null_batches_timed_later():
    true_nulls = [(300 + n * 10) * 1e-6 for n in (2, 2, 2, 5, 5, 5)]
    session, result, nulls = _kept(true_nulls)
    assert judge(conclude(session.null_rechecks["s"][0].batches, 900.0, GPU_GATED_WALL, 128),
                 900.0, GPU_GATED_WALL) is None  # fmt: skip
    failure = null_recheck.recheck(session, result)
    assert failure is not None and failure.code == Code.TIMING_MISMATCH
    assert "candidate's process was gone" in failure.reason
    assert result.checks["wall_clock"].startswith("failed")
    assert result.timing["wall"]["late_per_call_us"] == pytest.approx(1000.0)
    assert set(result.timing["wall"]["late_null_us"]) == {"2", "5"}
    assert [h["n"] for h in nulls.link.headers] == [2] * REPEATS + [5] * REPEATS
    assert session.null_rechecks == {}


def test_a_slower_null_later_changes_nothing_and_an_honest_call_passes_again():
    session, result, _ = _kept([1.0] * 6, hog_us=0.0, reported=1000.0)  # later nulls disturbed
    assert null_recheck.recheck(session, result) is None
    assert result.checks["wall_clock"] == "passed: ..."
    assert result.timing["wall"]["late_per_call_us"] == pytest.approx(1000.0)


def test_a_contract_scenarios_forge_caught_later_has_its_speedups_withheld():
    true_nulls = [(300 + n * 10) * 1e-6 for n in (2, 2, 2, 5, 5, 5)]
    session, result, _ = _kept(true_nulls, contract=True)
    assert null_recheck.recheck(session, result) is None
    assert "times unverified" in result.timing["unverified"]
    assert result.checks["wall_clock"].startswith("not counted")
