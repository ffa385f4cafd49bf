"""What the float64 reference costs, in units of the float64 matmul work it cannot avoid.

For each scenario (a suite's, or contract scenarios drawn from seeds: small enough for a CPU)
this times fa3_hopper's reference (``problem.reference``: what every verification, probe and
verified wall-clock batch computes) and divides by the time the scenario's matmul FLOPs take
at this device's measured float64 matmul rate. 1.0 would be a reference that is only its two
matmuls; the rest is conversion, masking and the softmax's passes over the scores. Prints one
line per scenario and the geomean ratio (measured in this run, so comparable across commits on
one machine).

Usage: python benchmarks/reference_cost.py --device cpu --draws 6          # this machine
       python benchmarks/reference_cost.py --device cuda --suite dev       # a GPU
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch

from evals.harness.contract.contract_draw import drawn_scenarios
from evals.harness.scenarios import Scenario
from evals.harness.targets import get_target
from evals.stats.intervals import geomean
from evals.targets.fa3_hopper import problem


def seconds(fn: object, device: str, repeats: int = 3) -> float:
    """Best of ``repeats`` wall times of ``fn()`` (synchronised on a GPU)."""
    best = math.inf
    for _ in range(repeats):
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        if device == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best


def matmul_rate(device: str) -> float:
    """Float64 matmul FLOP/s of this device (a square matmul, best of three)."""
    n = 4096 if device == "cuda" else 768
    a = torch.randn(n, n, dtype=torch.float64, device=device)
    return 2.0 * n**3 / seconds(lambda: a @ a, device)


def scenarios(suite: str | None, draws: int) -> list[Scenario]:
    """The suite's scenarios, else the contract scenarios drawn from seeds ``0..draws-1``."""
    target = get_target("fa3_hopper")
    if suite:
        return list(target.load_suite(suite).scenarios)
    return [s for seed in range(draws) for s in drawn_scenarios(target, "full", seed)]


def main() -> int:
    """Time every scenario's reference; print and optionally write the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--suite", help="a fa3_hopper suite (GPU sizes); default: draws")
    parser.add_argument("--draws", type=int, default=4, help="draw seeds when no --suite")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("error: no CUDA GPU", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    rate = matmul_rate(args.device)
    rows = []
    for s in scenarios(args.suite, args.draws):
        p = problem.Fa3Params.from_params(s.params)
        inputs = problem.make_inputs(p, seed=1, device=args.device)
        flops, _ = problem.work(p)
        took = seconds(lambda p=p, inputs=inputs: problem.reference(p, inputs), args.device)
        ratio = took / max(flops / rate, 1e-9)
        rows.append({"id": s.id, "reference_ms": took * 1e3, "ratio": ratio})
        print(f"{s.id:60} {took * 1e3:9.2f} ms  {ratio:8.2f}x its matmul time", flush=True)
    geo = geomean([r["ratio"] for r in rows])
    total = sum(r["reference_ms"] for r in rows)
    print(f"float64 matmul {rate / 1e9:.1f} GFLOP/s; references {total:.0f} ms in all; "
          f"geomean {geo:.2f}x their matmul time over {len(rows)}")  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps({"rate_flops": rate, "geomean": geo, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
