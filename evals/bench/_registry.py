"""Inspect entry point (``inspect_ai`` group): registers ``evals/<name>`` solvers and scorers."""

from evals.bench.registry import register_qualified
from evals.bench.scorer import kernel_speedup

register_qualified()

__all__ = ["kernel_speedup"]
