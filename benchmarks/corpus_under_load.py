"""Every CPU corpus kernel scored beside CPU hogs: which are accepted, which rejected, and why.

Issue 40's test of the harness is its held-out corpora scored with ``score --suite smoke`` on a
2-core host with two CPU hogs beside it: every cheat rejected, every honest kernel accepted.
This runs the same on the project's own corpora: each kernel of ``tests/cheats/cpu_attention``
and of ``tests/data/cpu_attention/honest.txt`` (or the kernels named), one after another, as
``python -m evals.harness score --target cpu_attention --suite SUITE``, with ``--hogs`` busy
processes running the whole time. It writes each kernel's log and verdict into ``--out``, a
``summary.tsv`` (kernel, honest, exit, status, first failure code and reason, wall seconds,
geomean speedup over the study scenarios) and prints the same table as it goes.

A cheat that the corpus's tests judge elsewhere (``NEUTRALISED`` in ``tests/test_cheats.py``:
accepted with no gain, or judged by its own test) may be accepted here; the table says so, and
the reader judges those against their tests. It exits 1 when an honest kernel is rejected.

Usage: python benchmarks/corpus_under_load.py --out DIR [--hogs 2] [--suite smoke] [KERNEL ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing it

from benchmarks.honest_margins import honest_kernels  # noqa: E402
from evals.harness.verdict.record import Verdict  # noqa: E402

CHEATS = ROOT / "tests" / "cheats" / "cpu_attention"
HOG = "while True: pass"


def score(kernel: Path, suite: str, out: Path) -> tuple[int, float, Verdict | None]:
    """Score ``kernel``; its exit status, wall seconds and verdict (None if none was written)."""
    verdict_path = out / f"{kernel.stem}.json"
    command = [sys.executable, "-m", "evals.harness", "score", "--target", "cpu_attention",
               "--kernel", str(kernel), "--suite", suite, "--json", str(verdict_path)]  # fmt: skip
    start = time.monotonic()
    with (out / f"{kernel.stem}.log").open("w") as log:
        rc = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT).returncode
    wall = time.monotonic() - start
    if not verdict_path.is_file():
        return rc, wall, None
    return rc, wall, Verdict.from_json(json.loads(verdict_path.read_text()))


def row(kernel: Path, honest: bool, rc: int, wall: float, verdict: Verdict | None) -> list[str]:
    """One line of the summary: kernel, honest, exit, status, code, reason, wall, geomean."""
    code = reason = geomean = "-"
    status = verdict.status if verdict is not None else "no verdict"
    if verdict is not None:
        failures = [r.failure for r in verdict.results if r.failure is not None]
        first = verdict.failure or (failures[0] if failures else None)
        if first is not None:
            code, reason = str(first.code.value), first.reason.replace("\t", " ")[:160]
        value = verdict.aggregates.geomean_speedup.get("sdpa")
        geomean = f"{value:.3f}" if value else "-"
    return [kernel.name, "honest" if honest else "cheat", str(rc), status, code, reason,
            f"{wall:.0f}", geomean]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Start the hogs, score each kernel, write and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--hogs", type=int, default=2, help="busy processes beside the runs")
    parser.add_argument("--suite", default="smoke")
    parser.add_argument("kernels", nargs="*", type=Path, help="default: both corpora")
    args = parser.parse_args(argv)
    honest = {k.resolve() for k in honest_kernels()}
    kernels = [k.resolve() for k in args.kernels] or sorted(
        {*honest, *(p.resolve() for p in CHEATS.glob("*.cpp"))}
    )
    missing = [str(k) for k in kernels if not k.is_file()]
    if missing:
        parser.error(f"no such kernel: {', '.join(missing)}")
    args.out.mkdir(parents=True, exist_ok=True)
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(args.hogs)]
    header = ["kernel", "kind", "exit", "status", "code", "reason", "wall_s", "x_sdpa"]
    lines = ["\t".join(header)]
    rejected_honest = []
    try:
        for kernel in kernels:
            rc, wall, verdict = score(kernel, args.suite, args.out)
            fields = row(kernel, kernel in honest, rc, wall, verdict)
            lines.append("\t".join(fields))
            print("  ".join(fields), flush=True)
            if kernel in honest and (verdict is None or verdict.status != "ok"):
                rejected_honest.append(kernel.name)
    finally:
        for hog in hogs:
            hog.kill()
    (args.out / "summary.tsv").write_text("\n".join(lines) + "\n")
    if rejected_honest:
        print(f"honest kernels rejected: {', '.join(rejected_honest)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
