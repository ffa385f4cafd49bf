"""Prototype on a GPU: the parent's clock on gated batches against the event-timed median.

The wall-clock check times back-to-back calls with the host's issue work inside the interval,
so a candidate that pads its host issue can hide a forged timer (THREATS.md, Known limits:
1.25x, more with padding). A gated batch keeps host issue out: the child (the worker's part)
queues N calls behind a gate (:mod:`evals.harness.measurement.stream_gate`), each on its set's
q flipped at an offset the parent writes into the gate only when it opens it, with the L2
flushed before each call as the timing loop does; it says it is armed; the parent opens the
gate and times until the child's answer that the device is done. The same batch without the
calls (the null batch: flushes and flips) is subtracted:

    U = median over batch pairs of (batch - null) / N,   per call, us
    (the channel's round trip is in both and cancels; N fills --batch-us of kernel time),

and printed beside the median device time the harness's timer gives the same kernel in the
same process (flush, spin, events; what a candidate reports). ``U / median`` is what a check
``U <= median x (1 + tolerance)`` would hold it to: about 1 for an honest kernel, the inverse
of the reported share for a forged timer (``timer_forge_padded.cu`` as
``benchmarks/gpu_forge_gain.py`` rewrites it). Each batch also proves it was gated: the
parent waits before opening, and the offsets the device copied must be the ones written at
the opening. The child runs unsandboxed: this measures the mechanism, it judges nothing.

Usage (H100/H200; FA3 importable for ``--upstream fa3``)::

    python benchmarks/gpu_gated_batch.py --kernel kernels/fa3_hopper/start.cu --out DIR
    python benchmarks/gpu_gated_batch.py --upstream fa3 --out DIR
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import select
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evals.harness.building.build import build  # noqa: E402
from evals.harness.measurement.stream_gate import Gate  # noqa: E402
from evals.harness.pipeline.environment import environment_fault  # noqa: E402
from evals.harness.targets import get_target  # noqa: E402

TARGET = "fa3_hopper"
SETS = 3
TIMED_CALLS = 30
SPIN_US = 400.0
ARM_TIMEOUT_S = 30.0
"""A child not armed by then is stuck behind the closed gate (a call that waits for the device);
the parent opens the gate and the batch counts as not gated."""
MAX_CALLS = 128
"""Most calls in one gated batch (their outputs are held until the batch ends)."""
HOLD_S = 0.02
"""The parent waits this long between the child's ``armed`` and the opening: a batch that
ran without waiting for the gate is done by then and shows as a near-empty interval."""


class Child:
    """The child process and its line-JSON channel (stdin, stdout)."""

    def __init__(self, gate: Gate, library: str | None, upstream: str | None) -> None:
        command = [sys.executable, __file__, "--child", "--gate-fd", str(gate.fd)]
        command += ["--library", library] if library else ["--upstream", str(upstream)]
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     pass_fds=(gate.fd,), text=True, cwd=ROOT)  # fmt: skip

    def ask(self, *, timeout_s: float | None = None, **request: Any) -> dict[str, Any] | None:
        """Send one request and wait for its answer; None if none came within ``timeout_s``."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return self.answer(timeout_s)

    def answer(self, timeout_s: float | None = None) -> dict[str, Any] | None:
        """The next answer; None if none came within ``timeout_s``."""
        assert self.proc.stdout is not None
        if timeout_s is not None and not select.select([self.proc.stdout], [], [], timeout_s)[0]:
            return None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the child ended (exit {self.proc.wait()})")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return answer

    def close(self) -> None:
        """Stop the child."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def gated_batch(child: Child, gate: Gate, *, n: int, null: bool, numel: int, events: bool,
                rng: random.Random) -> tuple[float, bool, dict[str, Any]]:  # fmt: skip
    """One batch: arm, hold, open, finish.

    Returns:
        Seconds on the parent's clock, whether the batch was gated, the child's last answer.
    """
    token = rng.randrange(1, 2**32)
    offsets = [rng.randint(0, numel) for _ in range(n)]
    armed = child.ask(op="arm", n=n, null=null, token=token, events=events,
                      timeout_s=ARM_TIMEOUT_S)  # fmt: skip
    time.sleep(HOLD_S)
    start = gate.open(token, b"".join(o.to_bytes(8, "little") for o in offsets))
    if armed is None:  # a call waited for the device, behind the closed gate
        child.answer()
    answer = child.ask(op="finish")
    seconds = time.perf_counter() - start
    gate.shut()
    answer = _required(answer)
    return seconds, armed is not None and answer["offsets"] == offsets[:2], answer


def _required(answer: dict[str, Any] | None) -> dict[str, Any]:
    if answer is None:
        raise RuntimeError("the child did not answer")
    return answer


def ping(child: Child) -> float:
    """The channel's round trip (seconds, the fastest of 20)."""
    best = float("inf")
    for _ in range(20):
        start = time.perf_counter()
        child.ask(op="ping")
        best = min(best, time.perf_counter() - start)
    return best


def scenario_row(child: Child, gate: Gate, scenario: Any, args: argparse.Namespace,
                 rng: random.Random) -> dict[str, Any]:  # fmt: skip
    """Median device time, gated U and their ratio for one scenario."""
    prepared = _required(child.ask(op="prepare", scenario=scenario.to_json(), seed=args.seed))
    overhead = ping(child)
    median_us = float(prepared["median_us"])
    # Enough calls that the kernels fill --batch-us: the flushes' and the channel's jitter,
    # tens of us a batch, then stays a small share of what the batch measures.
    n = min(MAX_CALLS, max(args.calls, math.ceil(args.batch_us / max(median_us, 1.0))))
    per_call: list[float] = []
    in_batch: list[dict[str, Any]] = []
    gated = True
    for _ in range(args.batches):
        calls, ok1, seen = gated_batch(child, gate, n=n, null=False, numel=prepared["numel"],
                                       events=args.events, rng=rng)  # fmt: skip
        empty, ok2, _ = gated_batch(child, gate, n=n, null=True, numel=prepared["numel"],
                                    events=False, rng=rng)  # fmt: skip
        gated = gated and ok1 and ok2
        per_call.append((calls - empty) / n * 1e6)
        in_batch.append({k: seen[k] for k in ("call_us", "step_us") if k in seen})
    # The median of paired batches: one slow empty batch (s35f: a ratio of -0.23) or one slow
    # batch of calls moves it no more than it moves any other batch, where the fastest batch
    # would hand a forge every low outlier.
    u_us = statistics.median(per_call)
    row = {"scenario": scenario.id, "median_us": median_us, "gated_us": u_us,
           "ratio": u_us / median_us, "batches_us": per_call, "calls": n,
           "ping_us": overhead * 1e6, "gated": gated}  # fmt: skip
    if args.events:
        row["in_batch"] = in_batch
    return row


def parent(args: argparse.Namespace) -> int:
    """Build, start the child, measure every timed scenario of the suite, write the table."""
    target = get_target(TARGET)
    fault = environment_fault(target, building=bool(args.kernel))
    if fault is not None:
        print(f"error: {fault.reason}", file=sys.stderr)
        return 2
    library = None
    if args.kernel:
        built = build(target, Path(args.kernel))
        if built.library is None:
            reason = built.failure.reason if built.failure else "no library"
            print(f"error: the build failed: {reason}", file=sys.stderr)
            return 2
        library = str(built.library)
    scenarios = target.load_suite(args.suite).scenarios
    gate, rng = Gate(), random.Random(args.seed)
    child = Child(gate, library, args.upstream)
    rows = []
    try:
        for scenario in scenarios:
            row = scenario_row(child, gate, scenario, args, rng)
            rows.append(row)
            print(f"{row['scenario']:55s} median {row['median_us']:9.1f} us  gated "
                  f"{row['gated_us']:9.1f} us  ratio {row['ratio']:.3f}  gated "
                  f"{'yes' if row['gated'] else 'NO'}", flush=True)  # fmt: skip
    finally:
        child.close()
        gate.close()
    ratios = [r["ratio"] for r in rows]
    print(
        f"ratio gated / median: min {min(ratios):.3f}, median {statistics.median(ratios):.3f}, "
        f"max {max(ratios):.3f}; every batch gated: {all(r['gated'] for r in rows)}"
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = Path(args.kernel).stem if args.kernel else args.upstream
    (out / f"gated-{name}.json").write_text(json.dumps({"args": vars(args), "rows": rows},
                                                       indent=1))  # fmt: skip
    return 0


class _Worker:
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

    def prepare(self, scenario: dict[str, Any], seed: int) -> dict[str, Any]:
        """The scenario's sets and calls, and its median device time as the harness times."""
        import torch

        from evals.harness.clock_checks.query_flips import base_bits, flip, flip_at, make_mask
        from evals.harness.scenarios import Scenario

        target, sc = self.target, Scenario(**scenario)
        sets = target.make_timing_inputs(sc, [seed * 1000 + i for i in range(SETS)])
        if self.ops is not None:
            calls = [target.prepare_candidate(self.ops, s) for s in sets]
        else:
            calls = [target.upstream(str(self.upstream)).prepare(s) for s in sets]
        q = sets[0]["q"]
        mask = make_mask(q, seed)
        bases = [base_bits(s["q"]) for s in sets]
        positions = torch.arange(q.numel(), device=q.device)
        for call in calls:
            call()
        # What arm() queues behind the gate, run once ungated: a kernel's first launch loads
        # its module and waits for the device (stream_gate.DeviceGate.queue).
        offsets = torch.zeros(1, dtype=torch.int64, device=q.device)
        self.flush.zero_()
        for j, s in enumerate(sets):
            flip_at(s["q"], bases[j], mask, offsets, 0, positions)
        torch.cuda.synchronize()
        rng, times = random.Random(seed), []
        for t in range(TIMED_CALLS):
            j = t % SETS
            flip(sets[j]["q"], bases[j], mask, rng.randint(0, q.numel()))
            times.append(self.timer.time_call(calls[j], spin_us=SPIN_US).device_us)
        self.state = {"sets": sets, "calls": calls, "mask": mask, "bases": bases,
                      "positions": positions}  # fmt: skip
        return {"numel": q.numel(), "median_us": statistics.median(times)}

    def arm(self, n: int, null: bool, token: int, events: bool) -> dict[str, Any]:
        """Queue ``n`` flushed, flipped calls (none when ``null``) behind the gate.

        With ``events``, CUDA events also bracket each call and each step (flush, flip, call):
        where a gated batch's time goes, inside the calls or between them.
        """
        import torch

        from evals.harness.clock_checks.query_flips import flip_at

        st = self.state
        offsets = torch.zeros(n, dtype=torch.int64, device="cuda")
        self.gate.queue(token, offsets)
        outputs, marks = [], []
        for i in range(n):
            j = i % SETS
            step = _event() if events else None
            self.flush.zero_()
            flip_at(st["sets"][j]["q"], st["bases"][j], st["mask"], offsets, i, st["positions"])
            if not null:
                begin = _event() if events else None
                outputs.append(st["calls"][j]())
                if events:
                    marks.append((step, begin, _event()))
        st["offsets"], st["outputs"], st["marks"] = offsets, outputs, marks
        return {"armed": True}

    def finish(self) -> dict[str, Any]:
        """Wait for the device; the first two offsets the device received.

        With events, also the median call and the median step (flush, flip, call: from one
        step's start to the next's), us.
        """
        import torch

        torch.cuda.synchronize()
        offsets = self.state.pop("offsets")[:2].tolist()
        self.state.pop("outputs")
        marks = self.state.pop("marks")
        answer: dict[str, Any] = {"offsets": offsets}
        if marks:
            calls = [b.elapsed_time(e) * 1e3 for _, b, e in marks]
            steps = [a[0].elapsed_time(b[0]) * 1e3 for a, b in itertools.pairwise(marks)]
            answer["call_us"] = statistics.median(calls)
            answer["step_us"] = statistics.median(steps) if steps else None
        return answer


def _event() -> Any:
    """A recorded CUDA event with timing, on the current stream."""
    import torch

    event = torch.cuda.Event(enable_timing=True)
    event.record()
    return event


def serve(gate_fd: int, library: str | None, upstream: str | None) -> int:
    """The child: answer line-JSON requests on stdin until it closes.

    The answers go out on a private copy of stdout; fd 1 then points at stderr, so whatever the
    kernel prints (a forge announcing itself) cannot corrupt the channel.
    """
    channel = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    worker = _Worker(gate_fd, library, upstream)
    for line in sys.stdin:
        req = json.loads(line)
        try:
            if req["op"] == "prepare":
                answer = worker.prepare(req["scenario"], int(req["seed"]))
            elif req["op"] == "arm":
                answer = worker.arm(
                    int(req["n"]), bool(req["null"]), int(req["token"]), bool(req["events"])
                )
            elif req["op"] == "finish":
                answer = worker.finish()
            else:
                answer = {"pong": True}
        except Exception as exc:  # said to the parent, which stops
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(answer), file=channel, flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments; run the parent, or the child when ``--child``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--kernel", help="a fa3_hopper candidate (.cu)")
    which.add_argument("--upstream", help="an upstream judged as the candidate (fa3)")
    parser.add_argument("--suite", default="smoke")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--calls", type=int, default=16, help="fewest calls per gated batch")
    parser.add_argument(
        "--batch-us",
        type=float,
        default=2000.0,
        help="kernel time a batch should hold, us (more calls for short kernels)",
    )
    parser.add_argument("--batches", type=int, default=5, help="gated batches per scenario")
    parser.add_argument(
        "--events",
        action="store_true",
        help="bracket each call and step of a batch with CUDA events (diagnosis)",
    )
    parser.add_argument("--out", default="results/measurements/gated")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--gate-fd", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--library", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return serve(args.gate_fd, args.library, args.upstream)
    if not (args.kernel or args.upstream):
        parser.error("give --kernel FILE or --upstream NAME")
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
