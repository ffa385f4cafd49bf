"""The ``kernel_agent`` arm: the minimal-information agent, and every task's default solver."""

from __future__ import annotations

from inspect_ai.solver import Generate, Solver, TaskState, solver

from evals.bench.arms.common import LoopSettings, log_settings, task_settings
from evals.bench.config.keywords import keyword_settings

__all__ = ["kernel_agent"]


@solver
@keyword_settings(LoopSettings())
def kernel_agent(arm: LoopSettings) -> Solver:
    """Minimal-information agent: the task prompt, a shell, check/bench/submit, no questions.

    Args:
        arm: Its ``-S`` settings, :class:`~evals.bench.arms.common.LoopSettings`.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        settings = task_settings(state)
        log_settings("kernel_agent", settings, arm.resolved(settings))
        return await arm.run(state, settings)

    return solve
