"""Inspect entry point (``inspect_ai`` group): registers ``evals/<name>`` solvers and tasks."""

from pathlib import Path

from evals.bench.registry import register_qualified, register_tasks
from evals.bench.scorer import kernel_speedup

register_qualified()
register_tasks(Path(__file__).resolve().parents[2])

__all__ = ["kernel_speedup"]
