r"""``python -m evals.study``: arms x models x epochs on one task, in one resumable command.

    python -m evals.study fa3_hopper --arm kernel_agent --arm kernelseek_bank \\
        --model openai/gpt-5 --model anthropic/claude-opus-4-1 --epochs 5 --log-dir logs/study1
    # offline, on the CPU target: a scripted agent replaying a kernel stands in for the model
    python -m evals.study cpu_attention --arm kernel_agent --arm kernelseek_bank --epochs 3 \\
        --replay kernels/cpu_attention/start.cpp -T suite=smoke -T score_suite=smoke \\
        --log-dir /tmp/study

Prints the plan first (runs, each run's budget, device hours and agent tokens at most), then
runs the study as one Inspect eval set in ``--log-dir``; interrupted, the same command resumes
it. Once complete, the dataset and the leaderboard are written beside the log folder
(``<log-dir>-dataset``, ``<log-dir>-leaderboard``). The plan says each run's isolation: with
``-T sandbox=local`` the agent and the scorer share a user and a host, and the leaderboard marks
those runs. ``--publish`` is for results to publish: it refuses ``sandbox=local`` before anything
runs, and builds the results with ``--publish`` (any run not scored in a container refused).
Exit status: 0 complete, 1 some task did not complete (run the command again to resume), 2 bad
input (one line), or with ``--publish`` results that were not built.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evals.bench.config.targets import TARGETS
from evals.bench.config.validate import TaskArgumentError
from evals.inspect_preflight import (
    device_problem,
    model_problem,
    provider_package_problem,
    split_pairs,
    task_args,
)
from evals.study.plan import StudyPlan, StudyPlanError

EXIT_INCOMPLETE = 1
EXIT_BAD_INPUT = 2


def parser() -> argparse.ArgumentParser:
    """The command line."""
    p = argparse.ArgumentParser(
        prog="python -m evals.study",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("target", help="cpu_attention, fa3_hopper or fa4_blackwell")
    p.add_argument("--arm", action="append", default=[], help="a solver arm (repeatable)")
    p.add_argument("--model", action="append", default=[], help="provider/model (repeatable)")
    p.add_argument("--replay", type=Path, help="offline: a scripted agent submits this kernel")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--log-dir", type=Path, required=True)
    p.add_argument("-T", dest="task_args", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--max-samples", type=int, help="samples of one task run at once")
    p.add_argument("--retry-attempts", type=int, default=2)
    p.add_argument("--tokens-per-message", type=int, default=3000, help="for the token estimate")
    p.add_argument("--plan-only", action="store_true", help="print the plan and stop")
    p.add_argument(
        "--publish",
        action="store_true",
        help="results for publication: a container sandbox only, every run scored in one",
    )
    return p


def make_plan(args: argparse.Namespace) -> StudyPlan:
    """The plan from the command line.

    Raises:
        StudyPlanError: A bad argument (one line).
    """
    try:
        pairs = split_pairs(args.task_args)
    except TaskArgumentError as exc:
        raise StudyPlanError(str(exc)) from None
    if args.replay is not None:
        if args.model:
            raise StudyPlanError("--replay stands in for the model: give no --model with it")
        if not args.replay.is_file():
            raise StudyPlanError(f"--replay {args.replay}: no such file")
    models = ("mockllm/model",) if args.replay is not None else tuple(args.model)
    if args.target not in TARGETS:
        raise StudyPlanError(f"unknown task {args.target!r} (known: {', '.join(TARGETS)})")
    try:
        targs = task_args(args.target, pairs)
    except TaskArgumentError as exc:
        raise StudyPlanError(str(exc)) from None
    for model in models:
        problem = model_problem(model)
        if problem is not None:
            raise StudyPlanError(problem)
    return StudyPlan(
        target=args.target,
        arms=tuple(args.arm),
        models=models,
        epochs=args.epochs,
        task_args=targs,
        log_dir=args.log_dir.resolve(),
        tokens_per_message=args.tokens_per_message,
        publish=args.publish,
    )


def machine_problems(plan: StudyPlan) -> list[str]:
    """What this machine lacks to run the plan, one line each (empty: nothing).

    The checks `python -m evals.inspect_cli eval` makes of the machine: each model's provider
    package (the extra to install), a GPU target's device, a docker sandbox's engine.
    """
    found = [provider_package_problem(model) for model in plan.models]
    found.append(device_problem(plan.target, plan.task_args.sandbox))
    return [problem for problem in found if problem is not None]


def main(argv: list[str] | None = None) -> int:
    """Print the plan, run or resume the study, build the results; returns the exit status."""
    args = parser().parse_args(argv)
    try:
        plan = make_plan(args)
    except StudyPlanError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    problems = machine_problems(plan)
    if problems and not args.plan_only:
        print(f"error: {problems[0]}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print("\n".join(plan.lines()), flush=True)
    if args.plan_only:
        for problem in problems:
            print(f"before it can run here: {problem}")
        return 0
    from evals.bench.config.targets import bench_target
    from evals.replay import replay_model, submit_kernel
    from evals.study.run import run_study

    models = None
    if args.replay is not None:
        kernel_file = bench_target(plan.target).kernel_file
        models = [replay_model(submit_kernel(args.replay, kernel_file), then="repeat")]
    result = run_study(
        plan,
        models=models,
        retry_attempts=args.retry_attempts,
        max_samples=args.max_samples,
        display="plain",
    )
    if not result.complete:
        print(f"incomplete: run the same command again to resume ({plan.log_dir})")
        return EXIT_INCOMPLETE
    if not result.built:
        print(f"complete; the dataset was not built (above: why): {plan.log_dir}")
        return EXIT_BAD_INPUT if plan.publish else 0
    print(f"complete: dataset {result.dataset}, leaderboard {result.leaderboard}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
