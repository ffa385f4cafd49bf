"""The Inspect layer: target descriptors, tasks, the verified-speedup scorer, tools and arms.

Depends on inspect-ai; the harness (:mod:`evals.harness`) does not.
"""

from evals.bench.arms import (
    ARMS,
    autonomous,
    kernel_agent,
    kernelseek,
    kernelseek_bank,
    kernelseek_model,
    open_ended,
    scripted,
)
from evals.bench.metrics import (
    ci_high,
    ci_low,
    fast_1_0,
    fast_1_1,
    geomean_ok,
)
from evals.bench.scorer import kernel_speedup
from evals.bench.settings import TaskSettings
from evals.bench.targets import TARGETS, BenchTarget, bench_target
from evals.bench.task import kernel_task, target_task, task_arguments
from evals.bench.task_args import TaskArgs
from evals.bench.tools import bench, check, submit
from evals.bench.validate import TaskArgumentError

__all__ = [
    "ARMS",
    "TARGETS",
    "BenchTarget",
    "TaskArgs",
    "TaskArgumentError",
    "TaskSettings",
    "autonomous",
    "bench",
    "bench_target",
    "check",
    "ci_high",
    "ci_low",
    "fast_1_0",
    "fast_1_1",
    "geomean_ok",
    "kernel_agent",
    "kernel_speedup",
    "kernel_task",
    "kernelseek",
    "kernelseek_bank",
    "kernelseek_model",
    "open_ended",
    "scripted",
    "submit",
    "target_task",
    "task_arguments",
]
