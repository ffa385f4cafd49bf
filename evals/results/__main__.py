"""``python -m evals.results``: build the dataset from Inspect logs, render the leaderboard.

    python -m evals.results build LOGDIR... --out results/dataset/
    python -m evals.results leaderboard --dataset results/dataset/ --out results/leaderboard/

Exit status: 0 done; 2 bad input (one line on stderr: a missing folder, no KernelSeek runs).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

EXIT_BAD_INPUT = 2


def parser() -> argparse.ArgumentParser:
    """The command line."""
    p = argparse.ArgumentParser(prog="python -m evals.results", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="Inspect logs -> parquet dataset with a dataset card")
    b.add_argument("logs", nargs="+", type=Path, help="log files or folders (searched)")
    b.add_argument("--out", type=Path, required=True, help="dataset folder")
    b.add_argument("--note", help="a line printed at the top of the dataset card")
    lb = sub.add_parser("leaderboard", help="dataset -> README.md tables and PNG plots")
    lb.add_argument("--dataset", type=Path, default=Path("results/dataset"))
    lb.add_argument("--out", type=Path, default=Path("results/leaderboard"))
    lb.add_argument("--note", help="a line printed at the top of the leaderboard")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the command; returns the exit status."""
    args = parser().parse_args(argv)
    try:
        if args.command == "build":
            missing = [str(p) for p in args.logs if not p.exists()]
            if missing:
                raise ValueError(f"no such log file or folder: {', '.join(missing)}")
            from evals.results.dataset import build

            n = build(args.logs, args.out, note=args.note)
            print(f"{n} rows -> {args.out}")
        else:
            if not (args.dataset / "runs.parquet").exists():
                raise ValueError(f"{args.dataset} holds no runs.parquet (run `build` first)")
            from evals.results.leaderboard import render

            print(f"leaderboard -> {render(args.dataset, args.out, note=args.note)}")
    except (ValueError, ImportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0


if __name__ == "__main__":
    sys.exit(main())
