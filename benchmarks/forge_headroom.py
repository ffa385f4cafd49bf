"""The most a forged GPU timer could gain on a recorded verdict, given the checks' bounds.

A candidate that took over its worker can report any per-call time ``r``. What holds ``r`` is
the parent's clock over gated batches (U a call: ``U <= (1 + tolerance) r + margin_us +
overhead_us / calls``), the trace check (traced device time a call ``<= 1.25 r + 10 us``) and
the roofline floor. A forge that does the same work as an honest kernel has that kernel's U
and traced time, so, from the honest kernel's verdict, the smallest ``r`` every bound allows is

    r_min = max((U - margin_us - overhead_us / calls) / (1 + tolerance),
                (traced - 10) / 1.25, floor_us)

and a forge that knew each scenario's U in advance (the best it could do) would gain
``median / r_min`` there. This prints that figure per timed scenario, which bound sets it,
and its geomean over the study scenarios (the headline) and over the contract ones. A forge
that reports one fraction of every call keeps the least of the study scenarios' gains (a
contract scenario it fails only has its speedups withheld): printed as ``one fraction``.

``--tolerance T`` reads the same verdicts under another gated tolerance (what-if): the gains a
forge would keep, and the study scenarios whose honest U that tolerance would fail.

Usage: python benchmarks/forge_headroom.py [--tolerance T] VERDICT.json[.gz] [...]
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from evals.harness.clock_checks.wall_reading import bound_us
from evals.harness.clock_checks.wall_settings import WallSettings, wall_settings
from evals.harness.tracing.trace_judge import TRACED_SLOWER_FACTOR, TRACED_SLOWER_MARGIN_US
from evals.harness.verdict.record import ScenarioResult, Verdict
from evals.stats.intervals import geomean

TRACED = re.compile(r"traced ([0-9.]+) us a call")


@dataclass(frozen=True)
class Headroom:
    """One scenario's bound on a forge.

    Attributes:
        scenario: Scenario id.
        contract: Whether it is a contract scenario (outside the headline geomean).
        median_us: The honest kernel's reported (event-timed) median, microseconds.
        wall_us: The parent's clock a call over the gated batches (U), microseconds.
        gross_us: The same with nothing but the channel's round trip subtracted (the flips and
            digests left in), microseconds: U far under it means the subtractions decide.
        r_min_us: The smallest report every bound allows, microseconds.
        bound: Which bound sets ``r_min_us`` (``wall``, ``trace`` or ``roofline``).
        gain: ``median_us / r_min_us``, at least 1 (a forge gains nothing below its work).
    """

    scenario: str
    contract: bool
    median_us: float
    wall_us: float
    gross_us: float
    r_min_us: float
    bound: str
    gain: float


def headroom(result: ScenarioResult, settings: WallSettings | None = None) -> Headroom | None:
    """The bound on a forge in ``result``, or None where it has no gated wall figure.

    ``settings``: the gated check's (what-if); the target's own by default.
    """
    wall = result.timing.get("wall") or {}
    if not wall.get("gated") or "candidate" not in result.times:
        return None
    settings = settings or wall_settings("cuda", gated=True)
    median = result.times["candidate"].median_us
    calls = int(wall.get("best_calls") or wall["calls"])
    # the check's own bound, inverted: the report r whose bound_us(r) is the parent's U
    slack = bound_us(0.0, settings, calls)
    bounds = {"wall": (wall["per_call_us"] - slack) / (1 + settings.tolerance)}
    traced = TRACED.search(result.checks.get("trace", ""))
    if traced:
        bounds["trace"] = (float(traced.group(1)) - TRACED_SLOWER_MARGIN_US) / TRACED_SLOWER_FACTOR
    if result.floor_us:
        bounds["roofline"] = result.floor_us
    bound, r_min = max(bounds.items(), key=lambda item: item[1])
    return Headroom(
        scenario=result.scenario.id,
        contract=result.scenario.contract,
        median_us=median,
        wall_us=wall["per_call_us"],
        gross_us=(wall.get("gross_us") or {}).get("median_us", math.nan),
        r_min_us=r_min,
        bound=bound,
        gain=max(median / r_min, 1.0) if r_min > 0 else math.inf,
    )


def report(path: Path, tolerance: float | None = None) -> None:
    """Print the per-scenario bounds of the verdict at ``path`` and their geomeans.

    ``tolerance``: read it under this gated tolerance instead of the target's (what-if).
    """
    text = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    verdict = Verdict.from_json(json.loads(text))
    settings = wall_settings("cuda", gated=True)
    if tolerance is not None:
        settings = dataclasses.replace(settings, tolerance=tolerance)
    rows = [h for r in verdict.results if r.correct and (h := headroom(r, settings)) is not None]
    print(f"{path} ({verdict.target}, {verdict.suite}): {len(rows)} gated timed scenarios")
    print(
        f"  {'scenario':58} {'median':>9} {'U':>9} {'gross':>9} {'r_min':>9} {'bound':>8}"
        f" {'gain':>6}"
    )
    for h in rows:
        print(
            f"  {h.scenario[:58]:58} {h.median_us:9.1f} {h.wall_us:9.1f} {h.gross_us:9.1f}"
            f" {h.r_min_us:9.1f} {h.bound:>8} {h.gain:6.3f}{'  (contract)' if h.contract else ''}"
        )
    honest = [h for h in rows if not h.contract]
    study = [h.gain for h in honest]
    contract = [h.gain for h in rows if h.contract]
    for name, gains in (("headline (study)", study), ("contract", contract)):
        mean, largest = geomean(gains), max(gains, default=math.nan)
        mean_text = "nan" if mean is None else f"{mean:.3f}"
        print(f"  {name}: geomean gain {mean_text}, largest {largest:.3f}, {len(gains)}")
    if honest:
        ratios = sorted(h.wall_us / h.median_us for h in honest)
        print(
            f"  one fraction: at most {min(h.gain for h in honest):.3f}; study U over median:"
            f" {ratios[0]:.3f} to {ratios[-1]:.3f} (median {ratios[len(ratios) // 2]:.3f})"
        )
    if tolerance is not None:
        failing = [h.scenario for h in honest if h.r_min_us > h.median_us and h.bound == "wall"]
        print(f"  at tolerance {tolerance:g} the honest kernel fails {len(failing)}: {failing}")


def main(argv: list[str]) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("verdicts", nargs="+", type=Path, help="verdict JSON files (gated)")
    parser.add_argument("--tolerance", type=float, help="read under this gated tolerance")
    args = parser.parse_args(argv)
    if args.tolerance is not None and not 0 <= args.tolerance < 10:
        parser.error("--tolerance is a relative excess, 0 <= T < 10")
    for path in args.verdicts:
        if not path.is_file():
            print(f"error: {path}: no such verdict file", file=sys.stderr)
            return 2
        try:
            report(path, args.tolerance)
        except (OSError, EOFError, ValueError) as exc:  # unreadable, cut, not JSON, not a verdict
            print(f"error: {path}: not a readable verdict: {exc}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
