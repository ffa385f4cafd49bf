"""Which fa4_blackwell scenarios FlashAttention-4 runs on this GPU, how accurately, and its compile.

FA4 is fa4_blackwell's accuracy baseline, so a scenario FA4 refuses (or gets wrong) cannot be
judged. For each scenario of the suites named (and the contract scenarios drawn from seeds
``0..--draws-1``) this calls FA4 once through the harness's own upstream (``Fa4``), then again,
and records: the error against the float64 reference (max abs), FA4's first call (its JIT
compile, ms) and its second call (ms, host clock; not a timing figure), or the error FA4 raised.
Writes ``--out`` (JSON) and prints one line per scenario and a tally.

Usage: KERNELSEEK_FA4_ARCH=sm_90a python benchmarks/fa4_support.py --out fa4_support.json \
           --suite dev --suite full --draws 8
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import torch

from evals.harness.contract.contract_draw import drawn_scenarios
from evals.harness.scenarios import Scenario
from evals.targets.fa4_blackwell.target import Fa4Blackwell
from evals.targets.fa4_blackwell.upstreams import Fa4


def probe(target: Fa4Blackwell, fa4: Fa4, scenario: Scenario) -> dict[str, Any]:
    """FA4 on one scenario: status, error against float64, first and second call (ms)."""
    row: dict[str, Any] = {"id": scenario.id, "drawn": scenario.drawn}
    reason = fa4.unsupported_reason(scenario)
    if reason is not None:
        return row | {"status": "unsupported", "reason": reason}
    try:
        inputs = target.make_inputs(scenario, seed=0)
        reference = target.reference(scenario, inputs)
        call = fa4.prepare(inputs)
        times = []
        for _ in range(2):
            torch.cuda.synchronize()
            start = time.perf_counter()
            out = call()
            torch.cuda.synchronize()
            times.append((time.perf_counter() - start) * 1e3)
        error = (out.double() - reference).abs().max().item()
    except Exception as exc:  # FA4 refusing a configuration is the finding, not a crash
        text = f"{type(exc).__name__}: {exc}".splitlines()
        return row | {"status": "error", "reason": " ".join(text)[:400]}
    finally:
        torch.cuda.empty_cache()
    status = "ok" if math.isfinite(error) else "non_finite"
    return row | {
        "status": status,
        "max_abs_error": error,
        "first_call_ms": round(times[0], 1),
        "second_call_ms": round(times[1], 2),
    }


def main() -> int:
    """Probe every scenario asked for; exit 1 when FA4 failed on any."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--suite", action="append", default=[], help="repeatable; default dev")
    parser.add_argument("--draws", type=int, default=0, help="draw seeds per suite")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("error: no CUDA GPU", file=sys.stderr)
        return 2
    target, fa4 = Fa4Blackwell(), Fa4()
    scenarios: dict[str, Scenario] = {}
    for suite in args.suite or ["dev"]:
        for s in target.load_suite(suite).scenarios:
            scenarios.setdefault(s.id, s)
        for seed in range(args.draws):
            for s in drawn_scenarios(target, suite, seed):
                scenarios.setdefault(f"{s.id}@{suite}{seed}", s)
    rows = []
    for key, scenario in scenarios.items():
        row = probe(target, fa4, scenario) | {"key": key, "params": dict(scenario.params)}
        rows.append(row)
        shown = {k: row[k] for k in row if k not in ("params", "id", "drawn", "key")}
        print(f"{key}: {json.dumps(shown)}", flush=True)
        args.out.write_text(json.dumps({"fa4": fa4.version(), "rows": rows}, indent=1))
    tally: dict[str, int] = {}
    for row in rows:
        tally[row["status"]] = tally.get(row["status"], 0) + 1
    print("TALLY " + json.dumps(tally), flush=True)
    return 0 if set(tally) <= {"ok", "unsupported"} else 1


if __name__ == "__main__":
    sys.exit(main())
