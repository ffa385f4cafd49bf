"""Gated wall-clock batches on the CPU (``clock_checks/gated_batch.py``, ``worker/gated.py``).

The parent's side on a real gate page with fake workers: the offsets travel only through the
gate, the clock runs from the opening, a worker that cannot arm is let go and its batch thrown
away with the calls halved and new offsets drawn. The worker's side on CPU tensors with a gate
that opens at once: each call sees its own flipped q and the digests bind the outputs. The
GPU runs are ``tests/gpu/test_gated_wall.py``.
"""

import struct
import time

import pytest
import torch

from evals.harness import Code
from evals.harness.clock_checks import digest, gated_batch, query_flips, wall_clock, wall_reading
from evals.harness.clock_checks.gated_batch import Blocked, GatedLink
from evals.harness.clock_checks.wall_settings import GPU_GATED_WALL
from evals.harness.measurement.stream_gate import PAYLOAD_OFFSET, Gate
from evals.harness.targets import get_target
from evals.harness.worker import gated as worker_gated
from evals.harness.worker.gated import GatedQueue
from evals.harness.worker.serve import CandidateError, WallBatches
from evals.harness.worker_link import channel


def _offsets(gate, n):
    raw = gate.page[PAYLOAD_OFFSET : PAYLOAD_OFFSET + 8 * n]
    return [v for (v,) in struct.iter_unpack("<Q", raw)]


def _token(gate):
    return struct.unpack_from("<I", gate.page, 0)[0]


class GatedWorker:
    """A worker behind a real gate page: arms at once unless ``fits`` calls are too few, then
    waits (as a full launch queue would) until the gate's token is written."""

    def __init__(self, fits=1000, per_call_s=0.0, says_shut=False):
        self.gate, self.fits, self.per_call_s = Gate(), fits, per_call_s
        # answers how many calls returned while the gate was shut (True: as many as fit), or
        # this value as it stands
        self.says_shut = says_shut
        self.requests, self.seen_at_arm, self.opened_with, self.released = [], [], [], []
        self.armed_n = 0

    def request(self, header, timeout_s=None):
        self.requests.append(header)
        if "gated" in header:
            self.seen_at_arm.append((_token(self.gate), _offsets(self.gate, header["n"])))
            self.armed_n, self.was_blocked = header["n"], header["n"] > self.fits
            if self.was_blocked:  # blocked until the parent lets it go
                while _token(self.gate) != header["gated"]:
                    time.sleep(0.01)
                self.released.append(_offsets(self.gate, header["n"]))
            answer = {"ok": True, "armed": True, "n": header["n"]}
            if self.says_shut is True:
                answer["queued_shut"] = min(self.fits, header["n"])
            elif self.says_shut is not False:
                answer["queued_shut"] = self.says_shut
            return answer, b""
        if header.get("finish"):
            assert _token(self.gate) != 0, "finish before the opening"
            if not self.was_blocked:
                self.opened_with.append(_offsets(self.gate, self.armed_n))
            time.sleep(self.per_call_s * self.armed_n)
            return {"ok": True, "n": self.armed_n, "digests": ["d"] * self.armed_n}, b""
        if header.get("n"):
            raise AssertionError("an ungated batch sent to a gated worker")
        return {"ok": True, "n": 0}, b""


@pytest.fixture
def gated_worker():
    """Makes :class:`GatedWorker` s; their gate pages are closed after the test."""
    made = []

    def make(**kwargs):
        made.append(GatedWorker(**kwargs))
        return made[-1]

    yield make
    for worker in made:
        worker.gate.close()


def _meter(request):
    t0 = time.perf_counter()
    answer = request()
    return time.perf_counter() - t0, answer


def test_the_offsets_reach_the_worker_only_through_the_gate_and_the_clock_starts_there(
    gated_worker,
):
    worker = gated_worker(per_call_s=0.002)
    header = {"op": "wall", "n": 5, "digest_seed": 9, "shifts": [1, 2, 3, 4, 5]}
    seconds, answer = GatedLink().round_trip(worker, header, [1, 2, 3, 4, 5], 60.0, _meter)
    arm = worker.requests[0]
    assert "shifts" not in arm and arm["n"] == 5 and arm["digest_seed"] == 9
    assert worker.seen_at_arm == [(0, [0] * 5)]  # nothing in the page while it armed
    assert worker.opened_with == [[1, 2, 3, 4, 5]]
    assert answer["digests"] == ["d"] * 5
    assert seconds >= 0.01  # the finish's work is inside the interval
    assert worker.gate.page[:] == bytes(len(worker.gate.page))  # shut for the next batch


def test_a_worker_that_cannot_arm_is_let_go_and_its_batch_thrown_away(monkeypatch, gated_worker):
    monkeypatch.setattr(gated_batch, "ARM_TIMEOUT_S", 0.2)
    worker = gated_worker(fits=10)
    link = GatedLink(ceiling=64)
    with pytest.raises(Blocked):
        link.round_trip(worker, {"op": "wall", "n": 64, "digest_seed": 1}, list(range(64)),
                        60.0, _meter)
    assert link.ceiling == 32 and link.blocked == 1
    assert [r.get("finish") for r in worker.requests] == [None, True]  # drained, untimed
    assert worker.gate.page[:] == bytes(len(worker.gate.page))


def test_a_round_halves_its_calls_until_they_arm_and_draws_new_offsets(monkeypatch, gated_worker):
    # long enough that a batch that fits arms first on a busy host, short for the one that
    # does not
    monkeypatch.setattr(gated_batch, "ARM_TIMEOUT_S", 1.0)
    worker = gated_worker(fits=20)
    link = GatedLink(ceiling=128)
    plan = wall_clock.Plan(ping_s=0.0, q_numel=10_000, gated=link)
    batches = wall_clock.run_round(worker, 10.0, GPU_GATED_WALL, plan=plan, count=3)
    arms = [r for r in worker.requests if "gated" in r]
    # 2 and 8 calls arm; 32 blocks and halves the ceiling to 16, which arms
    assert [b.calls for b in batches] == [2, 8, 16]
    assert link.ceiling == 16 and link.blocked == 1
    # what a thrown-away batch's gate held (the worker could read it) is never used again
    assert len(worker.released) == 1
    assert not any(o == r[: len(o)] for o in worker.opened_with for r in worker.released)
    assert len({tuple(o) for o in worker.opened_with}) == len(worker.opened_with)
    assert [r["n"] for r in arms] == [2, 8, 32, 16]


@pytest.mark.parametrize("fits", [0, 1, 12])
def test_blocking_batches_down_to_a_few_calls_fails_the_check(monkeypatch, fits, gated_worker):
    # a candidate that blocked every batch of more than a few calls would spread the batch's
    # allowance over those few: blocked at 16 calls or fewer, the check fails instead
    monkeypatch.setattr(gated_batch, "ARM_TIMEOUT_S", 0.5)
    worker = gated_worker(fits=fits)
    plan = wall_clock.Plan(ping_s=0.0, q_numel=1000, gated=GatedLink())
    with pytest.raises(wall_clock.WallFailure, match="launch queue") as caught:
        wall_clock.run_round(worker, 1.0, GPU_GATED_WALL, plan=plan, count=4)
    assert caught.value.failure.code == Code.TIMING_MISMATCH


def test_a_worker_that_says_how_many_calls_fit_gets_that_ceiling_at_once(monkeypatch, gated_worker):
    monkeypatch.setattr(gated_batch, "ARM_TIMEOUT_S", 0.2)
    worker = gated_worker(fits=40, says_shut=True)
    link = GatedLink(ceiling=128)
    with pytest.raises(Blocked) as caught:
        link.round_trip(worker, {"op": "wall", "n": 128, "digest_seed": 1},
                        list(range(128)), 60.0, _meter)
    # three quarters of the 40 that returned while shut, below the halving's 64
    assert link.ceiling == 30 and not caught.value.waited


@pytest.mark.parametrize("says", [1, 2, 20])
def test_a_worker_that_says_few_calls_fit_is_only_halved_under_the_floor(
    monkeypatch, says, gated_worker
):
    # the figure is the candidate's: taken at its word it would set batches of one or two
    # calls, each with the batch's whole allowance, without a small batch ever blocking
    monkeypatch.setattr(gated_batch, "ARM_TIMEOUT_S", 0.2)
    worker = gated_worker(fits=10, says_shut=says)
    link = GatedLink(ceiling=128)
    with pytest.raises(Blocked):
        link.round_trip(worker, {"op": "wall", "n": 128, "digest_seed": 1},
                        list(range(128)), 60.0, _meter)
    assert link.ceiling == 64


def test_a_call_that_waits_on_the_device_fails_the_check_at_once(monkeypatch, gated_worker):
    # a host synchronisation inside every call: the first call never returns while the gate
    # is shut, which no launch queue explains; one let-go, not a halving down to 16 calls
    monkeypatch.setattr(gated_batch, "ARM_TIMEOUT_S", 0.2)
    worker = gated_worker(fits=0, says_shut=True)
    plan = wall_clock.Plan(ping_s=0.0, q_numel=1000, gated=GatedLink())
    with pytest.raises(wall_clock.WallFailure, match="first use") as caught:
        wall_clock.run_round(worker, 1.0, GPU_GATED_WALL, plan=plan, count=4)
    assert caught.value.failure.code == Code.HOST_WORK
    assert plan.gated.blocked == 1
    assert [r["n"] for r in worker.requests if "gated" in r] == [2]


@pytest.mark.parametrize("said", [None, -3, "7", 10_000])
def test_a_worker_that_says_nothing_usable_is_halved_as_before(monkeypatch, said, gated_worker):
    monkeypatch.setattr(gated_batch, "ARM_TIMEOUT_S", 0.2)
    worker = gated_worker(fits=10, says_shut=said)
    link = GatedLink(ceiling=64)
    with pytest.raises(Blocked) as caught:
        link.round_trip(worker, {"op": "wall", "n": 64, "digest_seed": 1}, list(range(64)),
                        60.0, _meter)
    assert link.ceiling == 32 and not caught.value.waited


# --- the worker's side, on CPU tensors --------------------------------------------------------


class OpenGate:
    """A device gate already open: the offsets are in the payload tensor as soon as queued.

    The host sees the token after ``opens_after`` calls (never by default: the parent opens a
    gate once the batch is armed)."""

    def __init__(self, offsets, opens_after=None):
        self.offsets, self.tokens, self.opens_after, self.asked = offsets, [], opens_after, 0

    def is_open(self, token):
        self.asked += 1
        return self.opens_after is not None and self.asked > self.opens_after

    def queue(self, token, payload):
        self.tokens.append(token)
        payload.copy_(torch.tensor(self.offsets[: payload.numel()], dtype=torch.int64))


def test_each_queued_call_sees_its_own_flipped_query_and_the_digests_bind_them(monkeypatch):
    monkeypatch.setattr(worker_gated.torch.cuda, "synchronize", lambda: None)
    torch.manual_seed(0)
    sets = [torch.randn(4, 8) for _ in range(2)]
    flips = [(query_flips.base_bits(q), query_flips.make_mask(q, 3)) for q in sets]
    calls = [lambda q=q: q * 2 for q in sets]  # an output that shows the q it saw
    offsets = [5, 17, 0, 32, 9]
    queue = GatedQueue(OpenGate(offsets))
    queue.warm(sets, flips, calls)
    _, shut = queue.arm(7, len(offsets), 11, sets, flips, calls)
    outputs, committed = queue.finish()
    assert shut == len(offsets)
    assert queue.gate.tokens == [7] and len(outputs) == len(committed) == 5
    for i, (out, shift) in enumerate(zip(outputs, offsets, strict=True)):
        expected = sets[i % 2].clone()
        query_flips.flip(expected, flips[i % 2][0], flips[i % 2][1], shift)
        assert torch.equal(out, expected * 2), i
        assert digest.hashed(digest.device_sums([out], 11), 11)[0] == committed[i]
    assert len(set(committed)) == 5


def test_the_worker_counts_the_calls_that_returned_before_the_gate_opened(monkeypatch):
    monkeypatch.setattr(worker_gated.torch.cuda, "synchronize", lambda: None)
    sets = [torch.randn(4, 8)]
    flips = [(query_flips.base_bits(sets[0]), query_flips.make_mask(sets[0], 3))]
    calls = [lambda: sets[0] * 2]
    queue = GatedQueue(OpenGate([0] * 6, opens_after=2))
    queue.warm(sets, flips, calls)
    _, shut = queue.arm(7, 6, 11, sets, flips, calls)
    assert shut == 2  # the third call returned once the parent had let the worker go
    queue.finish()


def test_a_batch_before_its_kernels_ran_once_is_refused():
    queue = GatedQueue(OpenGate([0]))
    with pytest.raises(RuntimeError, match="warmed"):
        queue.arm(1, 1, 1, [torch.zeros(2)], [(torch.zeros(2), torch.zeros(4))], [lambda: 0])


def test_the_gated_settings_hold_the_device_time_alone_within_a_tenth():
    assert GPU_GATED_WALL.tolerance == pytest.approx(0.10)
    assert not GPU_GATED_WALL.serial and GPU_GATED_WALL.max_calls <= gated_batch.MAX_CALLS
    # U for a 20 us call at the bound: 22 us + 0.5 us + 20 us spread over the batch
    assert wall_reading.bound_us(20.0, GPU_GATED_WALL, 100) == pytest.approx(22.7)


class GatedStub:
    """The worker's side of ``WallBatches`` with a gate: the CPU target, a call noting its q."""

    def __init__(self, offsets):
        self.target = get_target("cpu_attention")
        self.gate, self.seen, self.ops = OpenGate(offsets), [], None

    def prepare(self, inputs):
        def call():
            self.seen.append(inputs["q"].clone())
            return inputs["q"] * 2

        return call


def test_a_wall_op_arms_behind_the_gate_finishes_with_digests_and_keeps_the_outputs(monkeypatch):
    monkeypatch.setattr(worker_gated.torch.cuda, "synchronize", lambda: None)
    scenario = get_target("cpu_attention").load_suite("smoke").scenarios[1]
    offsets = [3, 40, 7, 0]
    stub = GatedStub(offsets)
    wall = WallBatches(stub)
    wall.handle({"op": "wall", "scenario": scenario.to_json(), "seeds": [3, 4], "mask_seed": 4,
                 "gated": True})
    warmed = len(stub.seen)  # every set's call ran once, ungated
    armed, _ = wall.handle({"op": "wall", "n": 4, "digest_seed": 5, "gated": 77})
    assert armed == {"ok": True, "armed": True, "n": 4, "queued_shut": 4} and warmed == 2
    done, _ = wall.handle({"op": "wall", "finish": True})
    assert done["n"] == 4 and len(set(done["digests"])) == 4
    handed, payload = wall.handle({"op": "wall", "outputs": [2]})
    out = channel.unpack_tensors(handed["tensors"], payload)[0]
    assert torch.equal(out, stub.seen[warmed + 2] * 2)
    assert digest.hashed(digest.device_sums([out], 5), 5)[0] == done["digests"][2]


def test_a_gated_request_to_a_worker_given_no_gate_is_a_harness_error():
    scenario = get_target("cpu_attention").load_suite("smoke").scenarios[1]
    stub = GatedStub([0])
    stub.gate = None
    wall = WallBatches(stub)
    with pytest.raises(CandidateError, match="no gate"):
        wall.handle({"op": "wall", "scenario": scenario.to_json(), "seeds": [3],
                     "mask_seed": 4, "gated": True})


@pytest.mark.parametrize(("set_bytes", "sets", "copies"), [
    (8 << 20, 3, 5),  # 24 MB a round against 2 x 50 MB: five copies
    (200 << 20, 3, 1),  # a round larger than the L2 is cold by itself
    (1 << 10, 3, gated_batch.MAX_COPIES),  # tiny inputs: capped
    (0, 3, 1),
])
def test_enough_copies_of_a_rounds_sets_to_fill_twice_the_l2(set_bytes, sets, copies):
    assert gated_batch.cold_copies(set_bytes, sets, 50 << 20) == copies


def test_copies_of_the_rounds_sets_are_cycled_in_order_with_the_same_work(monkeypatch):
    monkeypatch.setattr(worker_gated.torch.cuda, "synchronize", lambda: None)
    scenario = get_target("cpu_attention").load_suite("smoke").scenarios[1]
    stub = GatedStub([0, 0, 0, 0, 0, 0])
    wall = WallBatches(stub)
    wall.handle({"op": "wall", "scenario": scenario.to_json(), "seeds": [3, 4], "mask_seed": 4,
                 "gated": True, "copies": 3})
    assert len(wall.sets) == 6
    for i, inputs in enumerate(wall.sets):
        twin = wall.sets[i % 2]
        assert torch.equal(inputs["k"], twin["k"]) and torch.equal(inputs["v"], twin["v"])
        if i >= 2:  # its own memory: cold while the others run
            assert inputs["k"].data_ptr() != twin["k"].data_ptr()


class CopyStub(GatedStub):
    """A ``GatedStub`` whose calls note which copy of the sets they ran on (k's memory)."""

    def prepare(self, inputs):
        def call():
            self.seen.append(inputs["k"].data_ptr())
            return inputs["q"] * 2

        return call


@pytest.mark.parametrize("gated", [True, False])
def test_each_batch_starts_on_the_copies_the_last_one_left_cold(monkeypatch, gated):
    """Batches shorter than the copies restarted at the first copy, whose inputs the last
    batch had left in the L2; now the copies cycle across batches, a whole round at a time,
    so call ``i`` still runs on a copy of set ``i % len(seeds)`` as the parent rebuilds it."""
    monkeypatch.setattr(worker_gated.torch.cuda, "synchronize", lambda: None)
    scenario = get_target("cpu_attention").load_suite("smoke").scenarios[1]
    stub = CopyStub([0] * 8)
    wall = WallBatches(stub)
    wall.handle({"op": "wall", "scenario": scenario.to_json(), "seeds": [3, 4], "mask_seed": 4,
                 "gated": gated, "copies": 3})  # fmt: skip
    copy_of = {s["k"].data_ptr(): i for i, s in enumerate(wall.sets)}
    runs = []
    for n in (2, 3, 2, 2):
        stub.seen.clear()
        if gated:
            wall.handle({"op": "wall", "n": n, "digest_seed": 5, "gated": 77})
            wall.handle({"op": "wall", "finish": True})
        else:
            wall.handle({"op": "wall", "n": n, "digest_seed": 5, "shifts": [0] * n})
        runs.append([copy_of[ptr] for ptr in stub.seen])
    assert runs == [[0, 1], [2, 3, 4], [0, 1], [2, 3]]
    assert all(copy % 2 == i % 2 for run in runs for i, copy in enumerate(run))
