"""Building a KernelSeek task for a target: validated settings, workspace, prompt, scorer.

A task file is a thin ``@task`` over :func:`target_task`; :func:`task_arguments` gives it the
target's ``-T`` arguments and defaults (from its :class:`~evals.bench.config.targets.BenchTarget`)::

    @task
    @task_arguments("cpu_attention")
    def cpu_attention(args: TaskArgs) -> Task:
        return target_task("cpu_attention", args)

The task's version is its target folder's (``evals/targets/<name>/target.toml``'s history).
In the local sandbox (``-T sandbox=local``, or Inspect's ``--sandbox local``) every sample starts
by logging :data:`~evals.bench.config.settings.LOCAL_WARNING` (the agent and the scorer share a
user and a host): a setup step, which no ``--solver`` replaces.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from inspect_ai import Task
from inspect_ai.dataset import Sample
from inspect_ai.solver import Generate, Solver, TaskState, solver

from evals.bench.agent.prompt import build_prompt
from evals.bench.arms.kernel_agent import kernel_agent
from evals.bench.config.keywords import keyword_settings
from evals.bench.config.sandboxes import sandbox_spec
from evals.bench.config.settings import LOCAL_WARNING, TaskSettings
from evals.bench.config.targets import bench_target
from evals.bench.config.task_args import TaskArgs
from evals.bench.config.validate import TaskArgumentError, validate
from evals.bench.scoring.scorer import kernel_speedup, run_isolation

__all__ = [
    "kernel_task",
    "local_sandbox_warning",
    "target_settings",
    "target_task",
    "task_arguments",
]

logger = logging.getLogger(__name__)


def task_arguments(target: str) -> Callable[[Callable[[TaskArgs], Task]], Callable[..., Task]]:
    """A task file's ``@task`` takes the fields of :class:`TaskArgs`, defaults from ``target``."""
    return keyword_settings(bench_target(target).defaults)


def target_settings(target: str, args: TaskArgs | None = None) -> TaskSettings:
    """The settings of a run of ``target`` with ``args`` (default: the target's defaults).

    Raises:
        TaskArgumentError: No target has that name.
    """
    try:
        descriptor = bench_target(target)
    except KeyError:
        raise TaskArgumentError(f"unknown target {target!r}") from None
    return TaskSettings(target=target, **asdict(args or descriptor.defaults))


def target_task(target: str, args: TaskArgs) -> Task:
    """The task of ``target`` with ``args``: validated, then built by :func:`kernel_task`."""
    return kernel_task(target_settings(target, args))


@solver
def local_sandbox_warning() -> Solver:
    """In the local sandbox, log :data:`LOCAL_WARNING` as the sample starts; else nothing.

    The warning goes to the sample's transcript (an Inspect logger event) and the console.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        if run_isolation(TaskSettings.from_json(state.metadata["settings"])) == "local":
            logger.warning(LOCAL_WARNING)
        return state

    return solve


def kernel_task(
    settings: TaskSettings,
    *,
    version: int | None = None,
    solver: Solver | None = None,
    root: Path | None = None,
) -> Task:
    """The task: one sample whose workspace holds the start kernel and the contract.

    Args:
        settings: Validated here; a bad value raises :class:`TaskArgumentError`.
        version: The task's version; default: the target folder's current one (bumped there
            when a change could move scores).
        solver: Default: :func:`evals.bench.kernel_agent`.
        root: A checkout holding ``sandboxes/`` (see :mod:`evals.bench.config.sandboxes`).
    """
    validate(settings)
    descriptor = bench_target(settings.target)
    contract = descriptor.contract().read_text()
    sample = Sample(
        id=settings.target,
        input=build_prompt(settings, contract),
        files={settings.kernel_file: descriptor.start().read_text(), "CONTRACT.md": contract},
        metadata={"settings": settings.to_json()},
    )
    return Task(
        dataset=[sample],
        solver=solver or kernel_agent(),
        setup=local_sandbox_warning(),
        scorer=kernel_speedup(),
        sandbox=sandbox_spec(settings, root=root),
        # agent messages and tokens are enforced by the arms (evals.bench.config.budget), so that
        # questions and the questioner's tokens do not consume the agent's budget
        working_limit=settings.time_limit,
        version=descriptor.folder.version if version is None else version,
        metadata={
            "settings": settings.to_json(),
            "version_change": descriptor.folder.versions[-1].change,
        },
    )
