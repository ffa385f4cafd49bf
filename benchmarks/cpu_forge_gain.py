"""How much a clock forged inside the candidate's process gains on the CPU target.

Builds two variants of the corpus kernel ``tests/cheats/cpu_attention/timer_forge.cpp`` that
skip no call: one whose forged clock runs at ``--keep`` of the real pace while a call runs (it
reports that share of each call; within every bound at 5/7), and its honest twin (the same
source, the clock untouched). Both are benched on ``--suite`` with the same seed, one after
the other (``--runs`` times each, in turn); per seed, one JSON line: the geomean over the
scenarios both timed of the forged kernel's time over its twin's, each scenario's best over
the runs, by the worker's own figures (``timing.worker_us``: what the speedups used before
cpu_attention 19) and by the figures that count. Below 1 the forge gains.

Usage: python benchmarks/cpu_forge_gain.py --seeds 11 12 [--keep 5/7] [--suite smoke] [--runs 4]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import tempfile
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

from evals.harness import RunSettings, evaluate
from evals.harness.verdict.record import ScenarioResult, Verdict

ROOT = Path(__file__).resolve().parents[1]
FORGE = ROOT / "tests" / "cheats" / "cpu_attention" / "timer_forge.cpp"
INSTALL = "static const bool forged = install_forged_clock();"


def variants(folder: Path, keep: Fraction) -> tuple[Path, Path]:
    """The forge claiming ``keep`` of each call with no call skipped, and its honest twin."""
    source = FORGE.read_text()
    if source.count("* 5 / 6") != 2 or source.count(INSTALL) != 1:
        raise SystemExit(f"error: {FORGE} no longer has the forge this benchmark rewrites")
    held = 1 - keep  # the share of each call the forged clock holds back
    calls = source.replace("kBackToBackNs = 12000", "kBackToBackNs = 0")
    forged, twin = folder / "forge_within_bounds.cpp", folder / "forge_twin.cpp"
    forged.write_text(calls.replace("* 5 / 6", f"* {held.numerator} / {held.denominator}"))
    twin.write_text(calls.replace(INSTALL, "static const bool forged = false;"))
    return forged, twin


def ratio(forged: Sequence[Verdict], twin: Sequence[Verdict], of: str) -> tuple[float, int]:
    """Geomean over shared timed scenarios of forged over twin (``of``: worker or figure).

    Each side may hold several runs of its kernel: a scenario's best time over them counts
    (noise only adds time).
    """

    def time_us(r: ScenarioResult) -> float:
        if of == "worker":
            return float(r.timing["worker_us"]["candidate"])
        return r.times["candidate"].median_us

    def best(runs: Sequence[Verdict]) -> dict[str, float]:
        times: dict[str, float] = {}
        for r in (r for v in runs for r in v.results if "candidate" in r.times):
            times[r.scenario.id] = min(time_us(r), times.get(r.scenario.id, math.inf))
        return times

    ours, theirs = best(forged), best(twin)
    shared = sorted(set(ours) & set(theirs))
    logs = [math.log(ours[i] / theirs[i]) for i in shared]
    return (math.exp(sum(logs) / len(logs)) if logs else math.nan), len(shared)


def _first_failure(verdict: Verdict) -> str | None:
    """``scenario: code: reason`` of the verdict's first failure, or None (the record's why)."""
    for result in verdict.results:
        if result.failure is not None:
            return f"{result.scenario.id}: {result.failure.code}: {result.failure.reason}"
    return None if verdict.failure is None else f"{verdict.failure.code}: {verdict.failure.reason}"


def _line(seed: int, forged: Sequence[Verdict], twin: Sequence[Verdict]) -> dict[str, object]:
    """One seed's JSON line: each run's status, and the ratios over the runs that passed.

    ``*_forged_over_twin``: each scenario's best over the runs; ``figure_single_runs``: the
    n-th passing forged run over the n-th passing twin run; ``figure_twin_spread``: the
    smallest and largest ratio of one twin run to another (what noise alone does to one run).
    """
    line: dict[str, object] = {"seed": seed, "status": [v.status for v in (*forged, *twin)]}
    line["failures"] = [_first_failure(v) for v in (*forged, *twin)]
    ok_forged = [v for v in forged if v.status == "ok"]
    ok_twin = [v for v in twin if v.status == "ok"]
    if not ok_forged or not ok_twin:
        return line
    worker, n = ratio(ok_forged, ok_twin, of="worker")
    line |= {"runs": [len(ok_forged), len(ok_twin)], "scenarios": n,
             "worker_forged_over_twin": worker,
             "figure_forged_over_twin": ratio(ok_forged, ok_twin, of="figure")[0],
             "figure_single_runs": [ratio([f], [t], of="figure")[0]
                                    for f, t in zip(ok_forged, ok_twin, strict=False)]}  # fmt: skip
    pairs = [ratio([a], [b], of="figure")[0] for a, b in itertools.combinations(ok_twin, 2)]
    if pairs:
        line["figure_twin_spread"] = [min(pairs), max(pairs)]
    return line


def main(argv: list[str]) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[11])
    parser.add_argument("--keep", type=Fraction, default=Fraction(5, 7))
    parser.add_argument("--suite", default="smoke")
    parser.add_argument("--runs", type=int, default=1, help="runs of each kernel per seed, in turn")
    args = parser.parse_args(argv)
    if not 0 < args.keep < 1:
        parser.error("--keep must be a fraction between 0 and 1, e.g. 5/7")
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    with tempfile.TemporaryDirectory() as folder:
        forged, twin = variants(Path(folder), args.keep)
        for seed in args.seeds:
            verdicts = [
                evaluate(RunSettings("bench", "cpu_attention", k, suite=args.suite, seed=seed))
                for _ in range(args.runs)
                for k in (forged, twin)
            ]
            print(json.dumps(_line(seed, verdicts[::2], verdicts[1::2])), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
