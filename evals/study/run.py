"""Running a study: one resumable Inspect eval set, then the dataset and the leaderboard.

Every (arm, model) pair is one task of the eval set (the target's task with that arm as its
solver; Inspect tells them apart by their solver), run for the plan's epochs. Inspect's eval set
keeps its logs in the plan's folder and, run again with the same plan, skips what finished and
retries what did not (an interrupted run included). When every task's log is complete the
dataset and the leaderboard are built from the folder (``evals.results``), beside it; a plan
for publication builds them with ``--publish``, which refuses runs not scored in a container.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval_set, task_with
from inspect_ai.model import Model

from evals.bench.arms import ARMS
from evals.bench.task import target_task
from evals.heartbeat import heartbeat
from evals.study.plan import StudyPlan

__all__ = ["StudyResult", "run_study", "study_tasks"]


@dataclass(frozen=True)
class StudyResult:
    """What a study's invocation ended with.

    Attributes:
        complete: Every task of the eval set has a complete log.
        dataset: The dataset's folder (``<log-dir>-dataset``).
        leaderboard: The leaderboard's folder (``<log-dir>-leaderboard``).
        built: Both were written (only once complete; not without the ``results`` extra).
    """

    complete: bool
    dataset: Path
    leaderboard: Path
    built: bool = False


def study_tasks(plan: StudyPlan) -> list[Task]:
    """One task a plan's arm: the target's task (the plan's ``-T`` arguments), that solver."""
    return [_arm_task(plan, arm) for arm in plan.arms]


def _arm_task(plan: StudyPlan, arm: str) -> Task:
    task = target_task(plan.target, plan.task_args)
    metadata = {**(task.metadata or {}), "study_arm": arm}
    return task_with(task, solver=ARMS[arm](), name=plan.target, metadata=metadata)


def _record(plan: StudyPlan) -> dict[str, Any]:
    """The plan as JSON-ready metadata of every log of the study."""
    return {
        "target": plan.target,
        "arms": list(plan.arms),
        "models": list(plan.models),
        "epochs": plan.epochs,
        "task_args": asdict(plan.task_args),
        "publish": plan.publish,
    }


def run_study(
    plan: StudyPlan,
    *,
    models: Sequence[Model] | None = None,
    retry_attempts: int = 2,
    max_samples: int | None = None,
    build: Callable[[list[str]], int] | None = None,
    **eval_options: Any,
) -> StudyResult:
    """Run (or resume) ``plan`` as one eval set; build the results when it is complete.

    Args:
        plan: The study.
        models: Model objects to use instead of the plan's names (a replayed kernel's
            offline model); the plan's names label them.
        retry_attempts: Inspect's retries of a failed task within this invocation.
        max_samples: Samples run at once within a task (Inspect's default without it).
        build: ``evals.results`` main (an argument list to an exit status); default: imported.
        eval_options: Passed on to :func:`inspect_ai.eval_set` (``display``, ...).
    """
    logs = plan.log_dir
    model: list[str] | list[Model] = list(models) if models is not None else list(plan.models)
    with heartbeat(f"study {plan.target}", log_dir=logs):
        success, _ = eval_set(
            tasks=study_tasks(plan),
            log_dir=str(logs),
            model=model,
            epochs=plan.epochs,
            retry_attempts=retry_attempts,
            max_samples=max_samples,
            metadata={"study": _record(plan)},
            **eval_options,
        )
    dataset, board = logs.parent / f"{logs.name}-dataset", logs.parent / f"{logs.name}-leaderboard"
    if not success:
        return StudyResult(False, dataset, board)
    if build is None:
        from evals.results.__main__ import main as results_main

        build = results_main
    note = f"Study: {plan.target}, arms {', '.join(plan.arms)}, {plan.epochs} epochs."
    publish = ["--publish"] if plan.publish else []
    built = build(["build", str(logs), "--out", str(dataset), "--note", note, *publish]) == 0 and (
        build(
            [
                "leaderboard",
                "--dataset",
                str(dataset),
                "--out",
                str(board),
                "--note",
                note,
                *publish,
            ]
        )
        == 0
    )
    return StudyResult(True, dataset, board, built)
