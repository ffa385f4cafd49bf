"""benchmarks/gpu_gated_batch.py sizes its batches to what a closed gate can hold.

Everything queued behind the gate waits in the stream's launch queue; past about a thousand
operations the next launch blocks and the child never says it is armed (session 36, an H100:
three events a call on 128 calls). A fake child plays that queue here.
"""

import argparse
import struct

import pytest

from tests.helpers import load_benchmark


def _module():
    return load_benchmark("gpu_gated_batch")


class FakeGate:
    """The parent's gate: remembers the offsets written at each opening."""

    def __init__(self):
        self.opened = []

    def open(self, token, payload):
        self.opened.append([v for (v,) in struct.iter_unpack("<Q", payload)])
        return 0.0

    def shut(self):
        pass


class FakeChild:
    """A child whose launch queue holds ``fits`` calls; more and it is never armed in time."""

    def __init__(self, gate, fits):
        self.gate, self.fits, self.armed_sizes, self.pending = gate, fits, [], None

    def ask(self, *, timeout_s=None, **request):
        op = request["op"]
        if op == "prepare":
            return {"numel": 1000, "median_us": 10.0, "sets": 3}
        if op == "arm":
            if request["n"] > self.fits:
                self.pending = {"armed": True}  # comes only once the gate opens
                return None
            self.armed_sizes.append(request["n"])
            return {"armed": True}
        if op == "finish":
            return {"offsets": self.gate.opened[-1][:2], "digests": len(self.gate.opened[-1])}
        return {"pong": True}

    def answer(self, timeout_s=None):
        answer, self.pending = self.pending, None
        assert answer is not None, "the parent waited for an answer that never comes"
        return answer


class Scenario:
    id = "fake"

    def to_json(self):
        return {}


def _args(**extra):
    base = dict(seed=1, calls=16, batch_us=2000.0, batches=3, events=False, settle_us=0.0,
                digest=True, flush="memset")
    return argparse.Namespace(**{**base, **extra})


def test_a_batch_the_queue_cannot_hold_is_thrown_away_and_the_calls_halved(monkeypatch):
    mod = _module()
    monkeypatch.setattr(mod, "HOLD_S", 0.0)
    gate = FakeGate()
    child = FakeChild(gate, fits=40)
    row = mod.scenario_row(child, gate, Scenario(), _args(), mod.random.Random(0))
    # 2000 us of 10 us calls wants 200, capped at 128; 128 and 64 block, 32 fits
    assert row["calls"] == 32 and row["blocked"] == 2
    assert set(child.armed_sizes) == {32} and len(row["batches_us"]) == 3
    assert row["gated"]  # every deciding batch armed and saw its own offsets


def test_a_call_that_fills_the_queue_alone_is_an_error(monkeypatch):
    mod = _module()
    monkeypatch.setattr(mod, "HOLD_S", 0.0)
    gate = FakeGate()
    with pytest.raises(RuntimeError, match="fills the launch queue"):
        mod.scenario_row(gate=gate, child=FakeChild(gate, fits=0), scenario=Scenario(),
                         args=_args(), rng=mod.random.Random(0))


def test_a_batch_whose_digests_are_fewer_than_its_calls_is_not_counted_as_gated(monkeypatch):
    mod = _module()
    monkeypatch.setattr(mod, "HOLD_S", 0.0)
    gate = FakeGate()
    child = FakeChild(gate, fits=200)
    real_ask = child.ask

    def ask(**request):
        answer = real_ask(**request)
        if request["op"] == "finish":
            answer["digests"] = 1  # every call's output the same: no work per call
        return answer

    child.ask = ask
    row = mod.scenario_row(child, gate, Scenario(), _args(), mod.random.Random(0))
    assert not row["gated"]
