"""The child of ``benchmarks/gpu_gated_batch.py``: the worker's part of a gated batch.

It loads the candidate (or imports an upstream), makes one scenario's timing sets, times the
scenario's median device time as the harness does, and queues batches of calls behind the
gate the parent opens (:mod:`evals.harness.measurement.stream_gate`). It answers line-JSON
requests on stdin (``prepare``, ``arm``, ``finish``, ``ping``) on a private copy of stdout.
It runs unsandboxed: a measurement, not a check.

Every operation queued behind a closed gate sits in the stream's launch queue, which holds
about a thousand before the next launch blocks (the host then waits for the device, which
waits for the gate): the likely cause of session 36's hang with three events a call on 128
calls, to confirm. The parent
sizes batches from that: a batch not armed within its timeout is opened anyway, thrown
away and retried with half the calls.

Usage (from the parent only)::

    python benchmarks/gated_child.py --gate-fd FD (--library SO | --upstream NAME)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evals.harness.targets import get_target  # noqa: E402

TARGET = "fa3_hopper"
SETS = 3
"""Input sets the median is timed on (the harness's timing round)."""
MAX_SETS = 64
"""Most input sets a rotating batch cycles through."""
TIMED_CALLS = 30
SPIN_US = 400.0
DIGEST_SEED = 20261206
"""Weights of the device sums; a check would draw them from its secret seed."""


class Worker:
    """The child's state: the kernel, the gate, the timer, one scenario's sets and calls."""

    def __init__(self, gate_fd: int, library: str | None, upstream: str | None) -> None:
        import torch

        from evals.harness.measurement.gpu import CudaEventTimer
        from evals.harness.measurement.stream_gate import DeviceGate

        self.target = get_target(TARGET)
        self.ops = None
        if library:
            torch.ops.load_library(library)
            self.ops = getattr(torch.ops, self.target.contract.namespace)
        self.upstream = upstream
        self.timer = CudaEventTimer()
        self.flush = torch.empty(self.timer.flush_bytes, dtype=torch.uint8, device="cuda")
        self.gate = DeviceGate(gate_fd)
        self.state: dict[str, Any] = {}

    def prepare(self, scenario: dict[str, Any], seed: int, *, flush: str) -> dict[str, Any]:
        """The scenario's sets and calls, and its median device time as the harness times.

        ``flush``: ``memset``, the timer's L2 flush before each call of a batch; ``none``, no
        flush and the timing round's three sets (warm: how much a flush-free batch gains);
        ``rotate``, no flush and enough copies of the three sets (up to :data:`MAX_SETS` in
        all) that the inputs between a set's two calls fill twice the L2, so a call's inputs
        are cold without a harness kernel a candidate's process could skip (what the
        harness's gated check does, ``gated_batch.cold_copies``).
        """
        import torch

        from evals.harness.clock_checks import digest
        from evals.harness.clock_checks.query_flips import (
            base_bits,
            flip,
            flip_at,
            make_mask,
            positions,
        )
        from evals.harness.measurement.gpu import spin
        from evals.harness.scenarios import Scenario

        target, sc = self.target, Scenario(**scenario)
        sets = target.make_timing_inputs(sc, [seed * 1000 + i for i in range(SETS)])
        if flush == "rotate":  # copies of the round's sets, in order: the same work, cold
            one = sum(t.nbytes for t in sets[0].values() if isinstance(t, torch.Tensor))
            l2 = torch.cuda.get_device_properties(0).L2_cache_size
            copies = min(MAX_SETS // SETS, max(1, -(-2 * l2 // (SETS * max(one, 1)))))
            sets += [{k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in s.items()}
                     for _ in range(copies - 1) for s in sets[:SETS]]  # fmt: skip
        count = len(sets)
        if self.ops is not None:
            calls = [target.prepare_candidate(self.ops, s) for s in sets]
        else:
            calls = [target.upstream(str(self.upstream)).prepare(s) for s in sets]
        q = sets[0]["q"]
        mask = make_mask(q, seed)
        bases = [base_bits(s["q"]) for s in sets]
        rows = positions(q)
        outputs = [call() for call in calls]
        # What arm() queues behind the gate, run once ungated: a kernel's first launch loads
        # its module and waits for the device (stream_gate.DeviceGate.queue).
        offsets = torch.zeros(1, dtype=torch.int64, device=q.device)
        self.flush.zero_()
        spin(1)
        for j, s in enumerate(sets):
            flip_at(s["q"], bases[j], mask, offsets, 0, rows)
        digest.warm(outputs[0].numel(), DIGEST_SEED, q.device)
        digest.device_sums(outputs, DIGEST_SEED)
        torch.cuda.synchronize()
        rng, times = random.Random(seed), []
        for t in range(TIMED_CALLS):
            j = t % SETS  # the harness's timing round: its three sets, flushed
            flip(sets[j]["q"], bases[j], mask, rng.randint(0, q.numel()))
            times.append(self.timer.time_call(calls[j], spin_us=SPIN_US).device_us)
        self.state = {"sets": sets, "calls": calls, "mask": mask, "bases": bases,
                      "positions": rows, "dummy": torch.zeros_like(outputs[0]),
                      "flush": flush}  # fmt: skip
        return {"numel": q.numel(), "median_us": statistics.median(times), "sets": count}

    def arm(self, n: int, null: bool, token: int, *, events: bool, settle_us: float,
            digest: bool) -> dict[str, Any]:  # fmt: skip
        """Queue ``n`` flushed, flipped calls (none when ``null``) behind the gate.

        ``settle_us``: a spin after each flush (the flush's write-backs drain before the
        call, as behind the timing loop's spin). ``events``: CUDA events bracket each call
        (two launches a call: where the batch's time goes, inside the calls or between them).
        ``digest``: the outputs' device sums queued behind the calls (a null batch sums as
        many copies of a zero output), so the answer cannot come before the outputs exist.
        """
        import torch

        from evals.harness.clock_checks import digest as digests
        from evals.harness.clock_checks.query_flips import flip_at
        from evals.harness.measurement.gpu import spin

        st = self.state
        offsets = torch.zeros(n, dtype=torch.int64, device="cuda")
        self.gate.queue(token, offsets)
        cycles = int(settle_us * self.timer.cycles_per_us)
        outputs, marks = [], []
        for i in range(n):
            j = i % len(st["sets"])
            if st["flush"] == "memset":
                self.flush.zero_()
            if cycles:
                spin(cycles)
            flip_at(st["sets"][j]["q"], st["bases"][j], st["mask"], offsets, i, st["positions"])
            if not null:
                begin = _event() if events else None
                outputs.append(st["calls"][j]())
                if events:
                    marks.append((begin, _event()))
        sums = None
        if digest:
            sums = digests.device_sums(outputs or [st["dummy"]] * n, DIGEST_SEED)
        st["offsets"], st["outputs"], st["marks"], st["sums"] = offsets, outputs, marks, sums
        return {"armed": True}

    def finish(self) -> dict[str, Any]:
        """Wait for the device; the first two offsets it received, the digests' count.

        With events, also the median call inside the batch (us).
        """
        import torch

        from evals.harness.clock_checks import digest

        st = self.state
        sums = st.pop("sums")
        answer: dict[str, Any] = {}
        if sums is not None:  # hashing waits for the device: the sums end the batch
            answer["digests"] = len(set(digest.hashed(sums, DIGEST_SEED)))
        torch.cuda.synchronize()
        answer["offsets"] = st.pop("offsets")[:2].tolist()
        st.pop("outputs")
        marks = st.pop("marks")
        if marks:
            answer["call_us"] = statistics.median(b.elapsed_time(e) * 1e3 for b, e in marks)
        return answer


def _event() -> Any:
    """A recorded CUDA event with timing, on the current stream."""
    import torch

    event = torch.cuda.Event(enable_timing=True)
    event.record()
    return event


def serve(gate_fd: int, library: str | None, upstream: str | None) -> int:
    """Answer line-JSON requests on stdin until it closes.

    The answers go out on a private copy of stdout; fd 1 then points at stderr, so whatever the
    kernel prints (a forge announcing itself) cannot corrupt the channel.
    """
    channel = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    worker = Worker(gate_fd, library, upstream)
    for line in sys.stdin:
        req = json.loads(line)
        try:
            if req["op"] == "prepare":
                answer = worker.prepare(req["scenario"], int(req["seed"]),
                                        flush=str(req["flush"]))  # fmt: skip
            elif req["op"] == "arm":
                answer = worker.arm(int(req["n"]), bool(req["null"]), int(req["token"]),
                                    events=bool(req["events"]),
                                    settle_us=float(req["settle_us"]),
                                    digest=bool(req["digest"]))  # fmt: skip
            elif req["op"] == "finish":
                answer = worker.finish()
            else:
                answer = {"pong": True}
        except Exception as exc:  # said to the parent, which stops
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(answer), file=channel, flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments and serve."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gate-fd", type=int, required=True)
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--library")
    which.add_argument("--upstream")
    args = parser.parse_args(argv)
    return serve(args.gate_fd, args.library, args.upstream)


if __name__ == "__main__":
    sys.exit(main())
