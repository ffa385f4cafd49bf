"""Command line: ``python -m evals.harness {check,bench,score} --target T --kernel FILE``.

``python -m evals.harness report VERDICT.json`` prints the report of a verdict an earlier run
wrote with ``--json``, as that run printed it (with today's report format).

Exit status: 0 when every scenario is correct, 1 when the candidate failed (build error,
crash, wrong result, ...), 2 for a bad invocation (unknown target or suite, missing file) or
a fault of the machine (no CUDA GPU, compiler, CUDA toolkit or FA3; a device that stayed busy).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from evals.harness.pipeline.runner import evaluate
from evals.harness.run_settings import RunSettings
from evals.harness.sandbox.process_tree import become_subreaper
from evals.harness.targets import target_names
from evals.harness.verdict import report
from evals.harness.verdict.record import EXIT_STATUS, Verdict

EXIT_ERROR = EXIT_STATUS["error"]


def parser() -> argparse.ArgumentParser:
    """The argument parser."""
    p = argparse.ArgumentParser(prog="python -m evals.harness", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    helps = {
        "check": "build the candidate and verify it on every scenario of the suite",
        "bench": "check, then time candidate and upstream(s) per scenario",
        "score": "the final verdict: bench with a fresh secret seed",
    }
    for name, text in helps.items():
        sp = sub.add_parser(name, help=text, description=text)
        sp.add_argument("--target", required=True, help=f"one of: {', '.join(target_names())}")
        sp.add_argument("--kernel", type=Path, help="candidate source file")
        sp.add_argument(
            "--candidate-upstream",
            metavar="NAME",
            help="self-check: judge this upstream (e.g. fa3) as the candidate, against itself",
        )
        sp.add_argument("--suite", default="dev", help="scenario suite (default: dev)")
        sp.add_argument(
            "--scenario",
            action="append",
            default=[],
            metavar="ID",
            help="judge only this scenario (repeatable)",
        )
        sp.add_argument("--json", type=Path, help="also write the verdict as JSON here")
        sp.add_argument("--cache-dir", type=Path, help="build cache directory")
        sp.add_argument("--timeout", type=float, help="seconds one candidate request may take")
        sp.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
        sp.add_argument(
            "--keep-worker-log",
            type=Path,
            metavar="PATH",
            help="keep the workers' output (capped: head and tail) in this file",
        )
        sp.add_argument(
            "--time-budget",
            type=_positive_seconds,
            metavar="SECONDS",
            help="once the candidate's build and calls have taken this many seconds it gets no "
            "more, and the run ends with a verdict (for a caller with a limit of its own)",
        )
        sp.add_argument(
            "--keep-going",
            action="store_true",
            help="judge every scenario even after the same crash on two scenarios in a row",
        )
        if name != "score":
            sp.add_argument("--seed", type=int, help="input seed (default: random)")
    text = "print the report of a verdict an earlier run wrote with --json"
    sp = sub.add_parser("report", help=text, description=text)
    sp.add_argument("verdict", type=Path, help="the verdict's JSON file")
    return p


def _positive_seconds(text: str) -> float:
    """A positive, finite number of seconds (argparse says why another is refused)."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < seconds < float("inf"):
        raise argparse.ArgumentTypeError(f"a time budget is positive and finite, not {text}")
    return seconds


def _status(verdict: Verdict) -> int:
    """The exit status a verdict's run ends with."""
    return EXIT_STATUS[verdict.status]


def _report(path: Path) -> int:
    """Print the report of the verdict saved at ``path``; a bad file is one line, exit 2."""
    try:
        verdict = Verdict.from_json(json.loads(path.read_text()))
    except (OSError, json.JSONDecodeError, ValueError) as exc:
        print(f"error: cannot read the verdict {path}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    print(report.render(verdict), flush=True)
    return _status(verdict)


def _write_json(verdict: Verdict, path: Path | None) -> None:
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(verdict.to_json(), indent=1))
    tmp.replace(path)


def _notify(message: str) -> None:
    """Waits and other news of the run, on stderr (not with ``--quiet``: see the verdict)."""
    print(message, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    args = parser().parse_args(argv)
    if args.command == "report":
        return int(_report(args.verdict))
    become_subreaper()  # what a build or a worker leaves running comes back to this process
    settings = RunSettings(
        command=args.command,
        target=args.target,
        kernel=args.kernel,
        suite=args.suite,
        seed=getattr(args, "seed", None),
        cache_dir=args.cache_dir,
        call_timeout_s=args.timeout,
        candidate_upstream=args.candidate_upstream,
        scenario_ids=tuple(args.scenario),
        keep_going=args.keep_going,
        keep_worker_log=args.keep_worker_log,
        time_budget_s=args.time_budget,
    )
    progress = None if args.quiet else report.ProgressPrinter()
    verdict = evaluate(settings, progress=progress, notify=None if args.quiet else _notify)
    _write_json(verdict, args.json)
    print(report.render(verdict), flush=True)
    if verdict.status == "error":
        assert verdict.failure is not None
        print(f"error: {verdict.failure.reason}", file=sys.stderr)
    return _status(verdict)


if __name__ == "__main__":
    sys.exit(main())
