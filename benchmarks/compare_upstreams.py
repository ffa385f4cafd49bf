"""Compare two upstreams' device times from two verdicts on the scenarios both ran.

Each argument is ``VERDICT.json:UPSTREAM`` (e.g. FA3 from fa3_hopper's self-check, FA4 from
fa4_blackwell's dry-run self-check on the same GPU). For every study scenario id present and
timed in both, prints the two median device times (us) and their ratio, then the geomean
ratio. ``--control NAME`` (an upstream timed in both runs, such as cudnn) prints the same ratio
for it: how far the two runs drift apart, the error bar of the comparison.

Usage: python benchmarks/compare_upstreams.py fa3-selfcheck.json:fa3 fa4-selfcheck.json:fa4 \
           --control cudnn --out comparison.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from evals.stats.intervals import geomean


def median_times(path: Path, upstream: str) -> dict[str, float]:
    """Median device time (us) of ``upstream`` per study scenario id of the verdict at ``path``."""
    doc = json.loads(path.read_text())
    times = {}
    for scenario in doc["scenarios"]:
        stats = (scenario.get("times_us") or {}).get(upstream)
        if stats and not scenario.get("contract"):
            times[scenario["id"]] = float(stats["median_us"])
    return times


def compare(a: tuple[Path, str], b: tuple[Path, str], control: str | None) -> dict[str, Any]:
    """Rows of (id, a_us, b_us, b/a[, control ratio]) and the geomeans."""
    ta, tb = median_times(*a), median_times(*b)
    ca = median_times(a[0], control) if control else {}
    cb = median_times(b[0], control) if control else {}
    rows = []
    for sid in sorted(set(ta) & set(tb)):
        row: dict[str, Any] = {"id": sid, a[1]: ta[sid], b[1]: tb[sid], "ratio": tb[sid] / ta[sid]}
        if sid in ca and sid in cb:
            row["control_ratio"] = cb[sid] / ca[sid]
        rows.append(row)
    controls = [r["control_ratio"] for r in rows if "control_ratio" in r]
    return {
        "a": f"{a[0]}:{a[1]}",
        "b": f"{b[0]}:{b[1]}",
        "control": control,
        "rows": rows,
        "geomean_ratio": geomean([r["ratio"] for r in rows]),
        "geomean_control_ratio": geomean(controls),
    }


def parse(item: str) -> tuple[Path, str]:
    """``FILE:UPSTREAM`` to its parts (exit 2 with one line for a bad one)."""
    path, sep, name = item.rpartition(":")
    if not sep or not Path(path).is_file():
        print(f"error: {item!r}: give VERDICT.json:UPSTREAM of an existing file", file=sys.stderr)
        raise SystemExit(2)
    return Path(path), name


def main() -> int:
    """Print the comparison; write it to ``--out`` when given."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--control")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = compare(parse(args.a), parse(args.b), args.control)
    if not result["rows"]:
        print("error: no study scenario was timed in both verdicts", file=sys.stderr)
        return 2
    a_name, b_name = result["a"].rpartition(":")[2], result["b"].rpartition(":")[2]
    for r in result["rows"]:
        control = f"  control {r['control_ratio']:.3f}" if "control_ratio" in r else ""
        print(f"{r['id']:48} {a_name} {r[a_name]:9.1f} us  {b_name} {r[b_name]:9.1f} us  "
              f"{b_name}/{a_name} {r['ratio']:.3f}{control}")  # fmt: skip
    print(f"geomean {b_name}/{a_name} {result['geomean_ratio']:.3f} over {len(result['rows'])}"
          + (f"; control {args.control} {result['geomean_control_ratio']:.3f}"
             if result["geomean_control_ratio"] else ""))  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
