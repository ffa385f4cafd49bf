"""How far each honest CPU kernel stays inside the accuracy rule over many drawn scenarios.

Every run draws a few contract scenarios from its seed, so a kernel that is right by a hair
passes most runs and fails now and then: a software exp off by 1.5e-5 reached 0.94 of the
float32 tolerance over 320 draws, and failed one CI run in dozens. This runs each kernel on the
contract scenarios that seeds ``0 .. seeds-1`` draw for a suite (one input set each, the harness's
own reference, baseline and rule) and prints per kernel the worst ratio of max abs error to
tolerance, and where. It exits 1 when a kernel's worst ratio reaches ``--limit``: an honest
kernel of the corpora must keep a margin, or the tests that judge it are a coin toss. One
process per kernel, since each registers the same operator namespace.

Usage: python benchmarks/honest_margins.py --seeds 40                 # tests/data's honest list
       python benchmarks/honest_margins.py --seeds 10 kernels/cpu_attention/start.cpp
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HONEST_LIST = ROOT / "tests" / "data" / "cpu_attention" / "honest.txt"
TARGET = "cpu_attention"


def honest_kernels() -> list[Path]:
    """The honest CPU kernels of the corpora (the list the honest-kernel tests read)."""
    lines = HONEST_LIST.read_text().splitlines()
    return [ROOT / line for line in lines if line.strip() and not line.startswith("#")]


def worst_ratio(kernel: Path, seeds: int, suite: str) -> dict[str, object]:
    """Build ``kernel`` and judge it on every scenario the seeds draw; in this process.

    Returns ``{"kernel", "scenarios", "worst": [ratio, scenario id, seed]}`` or ``{"error"}``.
    """
    import torch

    from evals.harness.building.build import build
    from evals.harness.contract.contract_draw import drawn_scenarios
    from evals.harness.targets import get_target
    from evals.harness.verification.verify import check_output, expected

    target = get_target(TARGET)
    with tempfile.TemporaryDirectory(prefix="kernelseek-margins-") as cache:
        built = build(target, kernel, cache_dir=Path(cache))
        if built.library is None:
            reason = built.failure.reason if built.failure else "no library"
            return {"kernel": str(kernel), "error": f"build failed: {reason}"}
        torch.ops.load_library(str(built.library))
    ops = getattr(torch.ops, target.contract.namespace)
    worst: tuple[float, str, int] = (0.0, "", -1)
    count = 0
    for seed in range(seeds):
        for scenario in drawn_scenarios(target, suite, seed):
            inputs = target.make_inputs(scenario, seed)
            reference, baseline = expected(target, scenario, inputs)
            out = target.prepare_candidate(ops, inputs)()
            check = check_output(target, scenario, out, reference, baseline)
            ratio = check.max_abs_error / check.tolerance
            if not ratio <= worst[0]:  # NaN counts as worst
                worst = (ratio, scenario.id, seed)
            count += 1
    return {"kernel": str(kernel), "scenarios": count, "worst": list(worst)}


def _one(kernel: Path, seeds: int, suite: str) -> dict[str, object]:
    """:func:`worst_ratio` in a child process (its JSON line), or why it gave none."""
    command = [sys.executable, __file__, "--seeds", str(seeds), "--suite", suite, "--child"]
    proc = subprocess.run(
        [*command, str(kernel)], capture_output=True, text=True, cwd=ROOT, check=False
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"kernel": str(kernel), "error": f"exit {proc.returncode}: {tail}"}
    result: dict[str, object] = json.loads(lines[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    """Print each kernel's worst ratio; 1 if one reaches ``--limit``, 2 on bad input."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernels", nargs="*", type=Path, help="default: the honest list")
    parser.add_argument("--seeds", type=int, default=40, help="draw seeds 0 .. N-1")
    parser.add_argument("--suite", default="full", help="whose draw count each seed makes")
    parser.add_argument("--limit", type=float, default=0.75, help="worst ratio allowed")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    kernels = args.kernels or honest_kernels()
    missing = [k for k in kernels if not k.is_file()]
    if missing or args.seeds < 1:
        why = f"no such kernel file: {missing[0]}" if missing else "--seeds must be at least 1"
        print(f"honest_margins: {why}", file=sys.stderr)
        return 2
    if args.child:
        print(json.dumps(worst_ratio(kernels[0].resolve(), args.seeds, args.suite)))
        return 0
    over = 0
    for kernel in kernels:
        result = _one(kernel.resolve(), args.seeds, args.suite)
        if "error" in result:
            print(f"{kernel.name}: {result['error']}")
            over += 1
            continue
        ratio, where, seed = result["worst"]  # type: ignore[misc]
        mark = "  OVER THE LIMIT" if not ratio < args.limit else ""
        print(
            f"{kernel.name}: worst {ratio:.3f} of the tolerance over {result['scenarios']} "
            f"drawn scenarios ({where}, seed {seed}){mark}"
        )
        over += bool(mark)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
