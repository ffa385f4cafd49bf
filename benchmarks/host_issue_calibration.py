"""The host issue cap's figures: what each launch path's calls cost the host, measured.

Reads every saved verdict (``kernelseek.verdict/1``) under the given folders, and for each
GPU target and launch path collects the scenarios' median host issue times (microseconds):
the candidate's C++ operator (``candidate``: honest kernels only; the cheat corpus's files
are left out) and each upstream's, whether timed as an upstream or judged as the candidate
in a self-check (one launch path either way). It prints per target and path the count, the
median, p99 and slowest of these medians, the cap in the target's ``[host_issue]`` table and
its ratio to the slowest; it exits 1 when a path's cap is under ``margin`` times its slowest
(or a path has no cap), so the caps and the committed measurements cannot drift apart.

Usage: python benchmarks/host_issue_calibration.py results/measurements [--out FILE.md]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from evals.harness.verdict.record import Verdict
from evals.targets import target_folders

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class PathFigures:
    """One launch path's measured medians (us) on one target, and its cap."""

    target: str
    path: str
    medians_us: tuple[float, ...]
    devices: tuple[str, ...]
    cap_us: float | None
    margin: float

    def quantile(self, q: float) -> float:
        """The ``q`` quantile of the medians (nearest rank)."""
        ordered = sorted(self.medians_us)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    @property
    def ok(self) -> bool:
        """The cap is at least ``margin`` times the slowest median measured."""
        return self.cap_us is not None and self.cap_us >= self.margin * max(self.medians_us)


def _honest(verdict: Verdict) -> bool:
    """Not a cheat: outside the corpus (or its honest members), and not a forge-gain variant.

    The forge-gain benchmarks write their forged kernels as ``forge_*`` beside a
    ``forge_twin`` (``benchmarks/cpu_forge_gain.py``, ``benchmarks/gpu_forge_gain.py``).
    """
    path = Path(str(verdict.kernel.get("path") or ""))
    if path.name.startswith("forge_") and not path.name.startswith("forge_twin"):
        return False
    return "cheats/" not in str(path) or "honest" in str(path)


def _verdicts(folders: list[Path]) -> tuple[list[Verdict], int]:
    """Every verdict under ``folders`` and how many JSON files were not one."""
    found, skipped = [], 0
    for folder in folders:
        for path in sorted(folder.rglob("*.json")):
            try:
                found.append(Verdict.from_json(json.loads(path.read_text())))
            except (ValueError, OSError):
                skipped += 1
    return found, skipped


def calibrate(folders: list[Path]) -> tuple[list[PathFigures], int]:
    """Per GPU target and launch path, the medians under ``folders`` with the caps."""
    medians: dict[tuple[str, str], list[float]] = defaultdict(list)
    devices: dict[tuple[str, str], set[str]] = defaultdict(set)
    verdicts, skipped = _verdicts(folders)
    for verdict in verdicts:
        own = verdict.settings.get("candidate_upstream") or "candidate"
        device = str((verdict.provenance.get("device") or {}).get("name", "?"))
        for result in verdict.results:
            for name, stats in result.issue.items():
                path = own if name == "candidate" else name
                if name == "candidate" and own == "candidate" and not _honest(verdict):
                    continue
                medians[(verdict.target, path)].append(stats.median_us)
                devices[(verdict.target, path)].add(device)
    folders_by_name = target_folders()
    figures = []
    for (target, path), values in sorted(medians.items()):
        caps = folders_by_name[target].host_issue if target in folders_by_name else None
        if caps is None:
            continue  # a CPU target: no cap
        figures.append(
            PathFigures(
                target=target,
                path=path,
                medians_us=tuple(values),
                devices=tuple(sorted(devices[(target, path)])),
                cap_us=caps.cap_us.get(path),
                margin=caps.margin,
            )
        )
    return figures, skipped


def table(figures: list[PathFigures]) -> str:
    """The figures as a markdown table."""
    lines = [
        "| target | launch path | scenario medians | median us | p99 us | slowest us "
        "| cap us | cap / slowest | devices |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for f in figures:
        slowest = max(f.medians_us)
        cap = "none" if f.cap_us is None else f"{f.cap_us:.0f}"
        ratio = "-" if f.cap_us is None else f"{f.cap_us / slowest:.2f}"
        lines.append(
            f"| {f.target} | {f.path} | {len(f.medians_us)} | {f.quantile(0.5):.0f} "
            f"| {f.quantile(0.99):.0f} | {slowest:.0f} | {cap} | {ratio} | {', '.join(f.devices)} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the table; exit 1 when a cap is under its margin."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path, help="folders of saved verdicts")
    parser.add_argument("--out", type=Path, help="also write the table here")
    args = parser.parse_args(argv)
    missing = [str(f) for f in args.folders if not f.is_dir()]
    if missing:
        print(f"host_issue_calibration: no such folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    figures, skipped = calibrate(args.folders)
    text = table(figures) + f"\n\n({skipped} JSON file(s) were not verdicts of this schema)\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    short = [f"{f.target}/{f.path}" for f in figures if not f.ok]
    if short:
        print(f"under the margin (or no cap): {', '.join(short)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
