"""How much a GPU timer forged inside the candidate's process gains on fa3_hopper, in bounds.

Builds two variants of the corpus kernel ``tests/cheats/fa3_hopper/timer_forge_padded.cu`` (it
points torch's GOT slots of ``cudaEventElapsedTime`` at its own and skips no call): one that
reports each interval as ``max(floor x t, keep x t - hide_us)`` (the floor keeps it inside the
trace check's 1.25x, the rest inside the wall-clock check's) and spins on the host until
``pad_us`` have passed since the call began (host issue time, which the GPU's wall-clock bound
adds to the device time it holds the batches to: host and device work overlap back to back, so
the padding is an allowance the forge need not pay for); and its honest twin (the same source,
the timer untouched, no padding). Both are benched on ``--suite`` with the same seed, one after
the other; per seed, one JSON line: each verdict's status and first failure and, where both
pass, the geomean over the scenarios both timed of the forged kernel's device time over its
twin's (the figure the speedups use). Below 1 the forge gains.

Usage: python benchmarks/gpu_forge_gain.py --seeds 11 [--suite smoke] [--keep 0.8]
    [--hide-us 300] [--floor 0.55] [--pad-us 300] [--out FOLDER]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path

from evals.harness import RunSettings, evaluate
from evals.harness.verdict.record import Verdict

ROOT = Path(__file__).resolve().parents[1]
FORGE = ROOT / "tests" / "cheats" / "fa3_hopper" / "timer_forge_padded.cu"
INSTALL = "static const bool forged = install_forged_timer();"
FORGED_TIME = "*ms = fmaxf(*ms * 0.55f, *ms * 0.8f - 0.3f);"
PAD = "kPadNs = 300000;"


def variants(
    folder: Path, *, keep: float, hide_us: float, floor: float, pad_us: float
) -> tuple[Path, Path]:
    """The forge within the bounds and its honest twin, written into ``folder``."""
    source = FORGE.read_text()
    for part, count in ((INSTALL, 2), (FORGED_TIME, 1), (PAD, 1)):  # both entry points forge
        if source.count(part) != count:
            raise SystemExit(f"error: {FORGE} no longer has the forge this benchmark rewrites")
    forged, twin = folder / "forge_padded.cu", folder / "forge_twin.cu"
    forged.write_text(
        source.replace(
            FORGED_TIME, f"*ms = fmaxf(*ms * {floor}f, *ms * {keep}f - {hide_us / 1000.0}f);"
        ).replace(PAD, f"kPadNs = {int(pad_us * 1000)};")
    )
    twin.write_text(
        source.replace(INSTALL, "static const bool forged = false;").replace(PAD, "kPadNs = 0;")
    )
    return forged, twin


def ratio(forged: Verdict, twin: Verdict) -> tuple[float, int]:
    """Geomean over shared timed scenarios of the forged device time over the twin's."""

    def times(verdict: Verdict) -> dict[str, float]:
        return {r.scenario.id: r.times["candidate"].median_us for r in verdict.results
                if "candidate" in r.times}  # fmt: skip

    ours, theirs = times(forged), times(twin)
    shared = sorted(set(ours) & set(theirs))
    logs = [math.log(ours[i] / theirs[i]) for i in shared]
    return (math.exp(sum(logs) / len(logs)) if logs else math.nan), len(shared)


def _first_failure(verdict: Verdict) -> str | None:
    """``scenario: code: reason`` of the verdict's first failure, or None."""
    for result in verdict.results:
        if result.failure is not None:
            return f"{result.scenario.id}: {result.failure.code}: {result.failure.reason}"
    return None if verdict.failure is None else f"{verdict.failure.code}: {verdict.failure.reason}"


def main(argv: list[str]) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[11])
    parser.add_argument("--suite", default="smoke")
    parser.add_argument("--keep", type=float, default=0.8)
    parser.add_argument("--hide-us", type=float, default=300.0)
    parser.add_argument("--floor", type=float, default=0.55)
    parser.add_argument("--pad-us", type=float, default=300.0)
    parser.add_argument("--out", type=Path, help="folder for the verdicts (JSON)")
    args = parser.parse_args(argv)
    if not (0 < args.floor <= args.keep <= 1 and args.hide_us >= 0 and args.pad_us >= 0):
        parser.error("need 0 < --floor <= --keep <= 1 and non-negative --hide-us, --pad-us")
    with tempfile.TemporaryDirectory() as folder:
        kernels = variants(Path(folder), keep=args.keep, hide_us=args.hide_us,
                           floor=args.floor, pad_us=args.pad_us)  # fmt: skip
        for seed in args.seeds:
            verdicts = [
                evaluate(RunSettings("bench", "fa3_hopper", k, suite=args.suite, seed=seed))
                for k in kernels
            ]
            if args.out:
                args.out.mkdir(parents=True, exist_ok=True)
                for name, v in zip(("forged", "twin"), verdicts, strict=True):
                    (args.out / f"{name}-{seed}.json").write_text(json.dumps(v.to_json()))
            line: dict[str, object] = {"seed": seed, "status": [v.status for v in verdicts]}
            line["failures"] = [_first_failure(v) for v in verdicts]
            if all(v.status == "ok" for v in verdicts):
                gain, n = ratio(*verdicts)
                line |= {"scenarios": n, "forged_over_twin": gain}
            print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
