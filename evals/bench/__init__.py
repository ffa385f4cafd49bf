"""The Inspect layer: target descriptors, tasks, the verified-speedup scorer, tools and arms.

Depends on inspect-ai; the harness (:mod:`evals.harness`) does not.
"""

from evals.bench.agent.tools import bench, check, submit
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
from evals.bench.config.settings import TaskSettings
from evals.bench.config.targets import TARGETS, BenchTarget, bench_target
from evals.bench.config.task_args import TaskArgs
from evals.bench.config.validate import TaskArgumentError
from evals.bench.scoring.metrics import (
    ci_high,
    ci_low,
    fast_1_0,
    fast_1_1,
    geomean_ok,
)
from evals.bench.scoring.scorer import kernel_speedup
from evals.bench.task import kernel_task, target_task, task_arguments

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
