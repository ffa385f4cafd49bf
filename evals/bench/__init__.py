"""The Inspect layer: tasks, the verified-speedup scorer, tools and the default agent.

Depends on inspect-ai; the harness (:mod:`evals.harness`) does not.
"""

from evals.bench.agent import kernel_agent
from evals.bench.metrics import (
    ci_high,
    ci_low,
    fast_1_0,
    fast_1_1,
    geomean_ok,
)
from evals.bench.scorer import kernel_speedup
from evals.bench.settings import TaskSettings
from evals.bench.task import kernel_task
from evals.bench.tools import bench, check, submit

__all__ = [
    "TaskSettings",
    "bench",
    "check",
    "ci_high",
    "ci_low",
    "fast_1_0",
    "fast_1_1",
    "geomean_ok",
    "kernel_agent",
    "kernel_speedup",
    "kernel_task",
    "submit",
]
