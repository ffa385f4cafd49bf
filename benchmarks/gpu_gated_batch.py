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
the opening. The child (``benchmarks/gated_child.py``) runs unsandboxed: this measures the
mechanism, it judges nothing.

Options that test what a check would need: ``--digest`` queues the outputs' device sums
behind the calls (what binds the batch's end to work done: the answer cannot come before
them; the null batch sums as many zero outputs), ``--settle-us`` spins after each flush in
both batches (do the flush's write-backs slow the next call?), ``--flush none`` drops the
flush (a harness kernel the candidate's process could skip: warm inputs), ``--flush rotate``
drops it for enough copies of the sets cycled through that each call's inputs are cold (what
the harness's gated check does), ``--events`` times each call
inside the batch (is the excess inside the calls or between them?). A batch the child cannot
arm within 5 s (the stream's launch queue is full behind the closed gate) is thrown away and
the scenario retried with half the calls.

Usage (H100/H200; FA3 importable for ``--upstream fa3``)::

    python benchmarks/gpu_gated_batch.py --kernel kernels/fa3_hopper/start.cu --out DIR
    python benchmarks/gpu_gated_batch.py --upstream fa3 --out DIR --digest --events
"""

from __future__ import annotations

import argparse
import json
import math
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
from evals.harness.clock_checks.query_flips import shifts  # noqa: E402
from evals.harness.measurement.stream_gate import Gate  # noqa: E402
from evals.harness.pipeline.environment import environment_fault  # noqa: E402
from evals.harness.targets import get_target  # noqa: E402

TARGET = "fa3_hopper"
ARM_TIMEOUT_S = 5.0
"""A child not armed by then is stuck behind the closed gate (a full launch queue, or a call
that waits for the device): the parent opens the gate, throws the batch away and tries again
with half the calls."""
MAX_CALLS = 128
"""Most calls in one gated batch (their outputs are held until the batch ends)."""
HOLD_S = 0.02
"""The parent waits this long between the child's ``armed`` and the opening: a batch that
ran without waiting for the gate is done by then and shows as a near-empty interval."""


class Child:
    """The child process and its line-JSON channel (stdin, stdout)."""

    def __init__(self, gate: Gate, library: str | None, upstream: str | None) -> None:
        child = Path(__file__).with_name("gated_child.py")
        command = [sys.executable, str(child), "--gate-fd", str(gate.fd)]
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


class Blocked(Exception):
    """The child was not armed in time: too much queued behind the closed gate."""


def gated_batch(
    child: Child,
    gate: Gate,
    *,
    n: int,
    null: bool,
    numel: int,
    args: argparse.Namespace,
    rng: random.Random,
) -> tuple[float, bool, dict[str, Any]]:
    """One batch: arm, hold, open, finish.

    Returns:
        Seconds on the parent's clock, whether the device saw the offsets written at the
        opening, the child's last answer.

    Raises:
        Blocked: The child did not say it was armed within :data:`ARM_TIMEOUT_S`; the gate
            was opened to let it go and the batch was thrown away.
    """
    token = rng.randrange(1, 2**32)
    offsets = shifts(rng.getrandbits(62), n, numel)  # drawn as the harness draws them
    armed = child.ask(op="arm", n=n, null=null, token=token, events=args.events and not null,
                      settle_us=args.settle_us, digest=args.digest,
                      timeout_s=ARM_TIMEOUT_S)  # fmt: skip
    if armed is None:
        gate.open(token, b"".join(o.to_bytes(8, "little") for o in offsets))
        child.answer()
        child.ask(op="finish")
        gate.shut()
        raise Blocked
    time.sleep(HOLD_S)
    start = gate.open(token, b"".join(o.to_bytes(8, "little") for o in offsets))
    answer = _required(child.ask(op="finish"))
    seconds = time.perf_counter() - start
    gate.shut()
    return seconds, answer["offsets"] == offsets[:2], answer


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
    prepared = _required(child.ask(op="prepare", scenario=scenario.to_json(), seed=args.seed,
                                   flush=args.flush))  # fmt: skip
    overhead = ping(child)
    median_us = float(prepared["median_us"])
    # Enough calls that the kernels fill --batch-us: the flushes' and the channel's jitter,
    # tens of us a batch, then stays a small share of what the batch measures.
    n = min(MAX_CALLS, max(args.calls, math.ceil(args.batch_us / max(median_us, 1.0))))
    per_call: list[float] = []
    in_batch: list[dict[str, Any]] = []
    gated, blocked = True, 0
    while len(per_call) < args.batches:
        try:
            calls, ok1, seen = gated_batch(child, gate, n=n, null=False,
                                           numel=prepared["numel"], args=args, rng=rng)  # fmt: skip
            empty, ok2, _ = gated_batch(child, gate, n=n, null=True, numel=prepared["numel"],
                                        args=args, rng=rng)  # fmt: skip
        except Blocked:
            blocked += 1
            if n == 1:
                raise RuntimeError("one call alone fills the launch queue") from None
            n //= 2
            per_call.clear()  # every batch that decides has the same calls
            in_batch.clear()
            continue
        gated = gated and ok1 and ok2 and seen.get("digests", n) == n
        per_call.append((calls - empty) / n * 1e6)
        in_batch.append({k: seen[k] for k in ("call_us",) if k in seen})
    # The median of paired batches: one slow empty batch (s35f: a ratio of -0.23) or one slow
    # batch of calls moves it no more than it moves any other batch, where the fastest batch
    # would hand a forge every low outlier.
    u_us = statistics.median(per_call)
    row = {"scenario": scenario.id, "median_us": median_us, "gated_us": u_us,
           "ratio": u_us / median_us, "batches_us": per_call, "calls": n,
           "ping_us": overhead * 1e6, "gated": gated, "blocked": blocked,
           "sets": prepared["sets"]}  # fmt: skip
    if args.events:
        row["in_batch"] = in_batch
        row["call_in_batch_us"] = statistics.median(b["call_us"] for b in in_batch)
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
            inside = (f"  in batch {row['call_in_batch_us']:7.1f} us"
                      if "call_in_batch_us" in row else "")  # fmt: skip
            print(f"{row['scenario']:55s} median {row['median_us']:9.1f} us  gated "
                  f"{row['gated_us']:9.1f} us  ratio {row['ratio']:.3f}{inside}  calls "
                  f"{row['calls']:3d}  gated {'yes' if row['gated'] else 'NO'}",
                  flush=True)  # fmt: skip
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
        help="bracket each call of a batch with CUDA events (diagnosis)",
    )
    parser.add_argument(
        "--settle-us",
        type=float,
        default=0.0,
        help="a device spin after each flush in both batches, us (0: none)",
    )
    parser.add_argument(
        "--flush",
        choices=["memset", "none", "rotate"],
        default="memset",
        help="a batch's L2: the timer's flush before each call; none (warm); or rotate: no "
        "flush and copies of the sets cycled through to fill twice the L2 (the gated check's)",
    )
    parser.add_argument(
        "--digest",
        action="store_true",
        help="queue the outputs' device sums behind the calls (the batch end's binding)",
    )
    parser.add_argument("--out", default="results/measurements/gated")
    args = parser.parse_args(argv)
    if not (args.kernel or args.upstream):
        parser.error("give --kernel FILE or --upstream NAME")
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
