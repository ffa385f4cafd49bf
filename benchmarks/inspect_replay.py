"""First real rows: given kernels through the real Inspect task and scorer, then the results.

For each ``--kernel``, one eval of ``TASK`` (``kernel_agent`` driven by a scripted, offline
mockllm agent that writes the kernel into the workspace and submits it) for ``--epochs``
epochs; each kernel is its own arm on the leaderboard (``replay:<file stem>``). Then
``python -m evals.results build`` and ``leaderboard`` on the logs.

    # on the H200 (GPU host without Docker; no pip needed: wheels on PYTHONPATH are enough)
    python benchmarks/inspect_replay.py --task tasks/fa3_hopper -T sandbox=local \
        --kernel kernels/fa3_hopper/start.cu --kernel my_kernel.cu --epochs 2 \
        --out results/h200-first-rows
    # anywhere (CPU): the same flow on cpu_attention (smoke suite: about 2 minutes)
    python benchmarks/inspect_replay.py --task tasks/cpu_attention -T suite=smoke \
        -T score_suite=smoke --kernel kernels/cpu_attention/start.cpp \
        --kernel tests/data/cpu_attention/fast.cpp --epochs 2 --out /tmp/replay

Writes ``OUT/logs/`` (Inspect logs), ``OUT/dataset/`` and ``OUT/leaderboard/``. Exit status: 0
done; 1 an eval's log is not ``success``; 2 bad input; 3 evals done but the dataset was not
built (pandas, pyarrow or matplotlib missing: the line says which; build it elsewhere with the
printed command).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing it


def parser() -> argparse.ArgumentParser:
    """The command line."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--task", required=True, help="task file or folder, e.g. tasks/fa3_hopper")
    p.add_argument("--kernel", action="append", required=True, type=Path, help="repeatable")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("-T", dest="task_args", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--max-samples", type=int, default=1, help="epochs run at once (default 1)")
    return p


def run_kernel(args: argparse.Namespace, kernel: Path, targs: dict[str, str]) -> str:
    """One eval of the task with ``kernel`` submitted; returns an error line or "" (success)."""
    from inspect_ai import eval as inspect_eval

    from evals.bench import bench_target, kernel_agent
    from evals.heartbeat import heartbeat
    from evals.replay import replay_model, submit_kernel

    target = Path(args.task).name.removesuffix(".py")
    model = replay_model(submit_kernel(kernel, bench_target(target).kernel_file))
    # the log's name carries the arm, as `python -m evals.inspect_cli` names them
    os.environ["INSPECT_EVAL_LOG_FILE_PATTERN"] = f"{{task}}-replay-{kernel.stem}_{{id}}"
    with heartbeat(f"replay {kernel.name}", log_dir=args.out / "logs"):
        [log] = inspect_eval(
            args.task,  # relative to the repository root, the working directory (Inspect's rule)
            solver=kernel_agent(attempts=1),
            model=model,
            epochs=args.epochs,
            max_samples=args.max_samples,
            task_args=targs,
            log_dir=str(args.out / "logs"),
            metadata={"arm": f"replay:{kernel.stem}"},
            tags=[f"arm:replay:{kernel.stem}"],
            display="plain",
        )
    if log.status != "success":
        why = log.error.message.strip().splitlines()[-1] if log.error else "no error recorded"
        return f"error: {kernel}: log {log.location} status {log.status}: {why}"
    return ""


def build(out: Path) -> int:
    """Build the dataset and leaderboard from ``out/logs``; returns 0, or 3 if not built."""
    try:
        from evals.results.__main__ import main as results
    except ImportError as exc:
        print(
            f"dataset not built: {exc}; run elsewhere: python -m evals.results build "
            f"{out / 'logs'} --out {out / 'dataset'}",
            file=sys.stderr,
        )
        return 3
    note = "Pipeline rows: scripted kernels pushed through the real task and scorer."
    code = results(["build", str(out / "logs"), "--out", str(out / "dataset"), "--note", note])
    if code == 0:
        code = results(
            [
                "leaderboard",
                "--dataset",
                str(out / "dataset"),
                "--out",
                str(out / "leaderboard"),
                "--note",
                note,
            ]
        )
    return 3 if code else 0


def main(argv: list[str] | None = None) -> int:
    """Run the evals, then build; returns the exit status."""
    args = parser().parse_args(argv)
    try:
        from evals.inspect_preflight import split_pairs

        targs = dict(split_pairs(args.task_args))
        target = Path(args.task).name.removesuffix(".py")
        from evals.bench.config.targets import TARGETS

        runnable = [f"tasks/{n}" for n, t in TARGETS.items() if t.unavailable is None]
        if target not in TARGETS or TARGETS[target].unavailable is not None:
            raise ValueError(f"--task {args.task}: expected {' or '.join(runnable)}")
        missing = [str(k) for k in args.kernel if not k.is_file()]
        if missing or args.epochs < 1:
            raise ValueError(f"no such kernel: {', '.join(missing)}" if missing else "--epochs < 1")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args.kernel = [k.resolve() for k in args.kernel]
    args.out = args.out.resolve()
    task = Path(args.task).resolve()
    if not task.is_relative_to(ROOT):
        print(f"error: --task {args.task} is not inside {ROOT}", file=sys.stderr)
        return 2
    args.task = str(task.relative_to(ROOT))
    os.chdir(ROOT)
    failures = [line for k in args.kernel if (line := run_kernel(args, k, targs))]
    for line in failures:
        print(line, file=sys.stderr)
    if failures:
        return 1
    return build(args.out)


if __name__ == "__main__":
    sys.exit(main())
