"""``python -m evals.results``: build the dataset from Inspect logs, render the leaderboard.

    python -m evals.results build LOGDIR... --out .scratch/results/dataset/
    python -m evals.results leaderboard --dataset results/dataset/ --out .scratch/results/lb/

Neither overwrites shipped data (files git tracks, such as ``results/dataset/`` and
``results/leaderboard/``) unless ``--force`` is given. The leaderboard marks runs not scored in a
container (``isolation`` ``local`` or ``unknown``); with ``--publish`` either command refuses
them, writing nothing.

Exit status: 0 done; 2 bad input (one line on stderr: a missing folder, no KernelSeek runs,
an output folder holding shipped data, with ``--publish`` a run not scored in a container).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

EXIT_BAD_INPUT = 2
DEMO = Path(".scratch/results")  # git ignores .scratch/: the default place for new output


def parser() -> argparse.ArgumentParser:
    """The command line."""
    p = argparse.ArgumentParser(prog="python -m evals.results", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="Inspect logs -> parquet dataset with a dataset card")
    b.add_argument("logs", nargs="+", type=Path, help="log files or folders (searched)")
    b.add_argument("--out", type=Path, default=DEMO / "dataset", help="dataset folder")
    b.add_argument("--note", help="a line printed at the top of the dataset card")
    lb = sub.add_parser("leaderboard", help="dataset -> README.md tables and PNG plots")
    lb.add_argument("--dataset", type=Path, default=Path("results/dataset"))
    lb.add_argument("--out", type=Path, default=DEMO / "leaderboard")
    lb.add_argument("--note", help="a line printed at the top of the leaderboard")
    for cmd in (b, lb):
        cmd.add_argument(
            "--force", action="store_true", help="overwrite a folder holding shipped data"
        )
        cmd.add_argument(
            "--publish",
            action="store_true",
            help="refuse any run not scored in a container (isolation local or unknown)",
        )
    return p


def shipped(folder: Path) -> bool:
    """True when git tracks a file in ``folder`` (data shipped with the repository).

    Outside a git checkout (or without git) nothing is shipped.
    """
    if not folder.is_dir():
        return False
    try:
        proc = subprocess.run(
            ["git", "-C", str(folder), "ls-files", "--", "."],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except OSError:
        return False
    return proc.returncode == 0 and bool(proc.stdout.strip())


def _run(args: argparse.Namespace) -> str:
    """Do the command; returns the line to print. Raises ValueError for bad input."""
    if shipped(args.out) and not args.force:
        raise ValueError(
            f"{args.out} holds shipped data (tracked by git); write elsewhere with --out DIR, "
            "or pass --force to overwrite it"
        )
    if args.command == "build":
        missing = [str(p) for p in args.logs if not p.exists()]
        if missing:
            raise ValueError(f"no such log file or folder: {', '.join(missing)}")
        from evals.results.dataset import build

        rows = build(args.logs, args.out, note=args.note, publish=args.publish)
        return f"{rows} rows -> {args.out}"
    if not (args.dataset / "runs.parquet").exists():
        raise ValueError(f"{args.dataset} holds no runs.parquet (run `build` first)")
    from evals.results.leaderboard import render

    return f"leaderboard -> {render(args.dataset, args.out, note=args.note, publish=args.publish)}"


def main(argv: list[str] | None = None) -> int:
    """Run the command; returns the exit status."""
    args = parser().parse_args(argv)
    try:
        print(_run(args))
    except (ValueError, ImportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0


if __name__ == "__main__":
    sys.exit(main())
