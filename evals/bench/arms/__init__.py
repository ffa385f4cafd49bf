"""The solver arms, one module each, and :data:`ARMS`, the names they are registered under.

Every arm runs on every task as ``--solver NAME`` or ``--solver evals/NAME`` (see
:mod:`evals.bench.registry`), with the same budget, tools and stop condition.
"""

from __future__ import annotations

from collections.abc import Callable

from inspect_ai.solver import Solver

from evals.bench.arms.autonomous import autonomous
from evals.bench.arms.common import LoopSettings
from evals.bench.arms.kernel_agent import kernel_agent
from evals.bench.arms.kernelseek import kernelseek, kernelseek_bank, kernelseek_model
from evals.bench.arms.open_ended import open_ended
from evals.bench.arms.scripted import scripted

__all__ = [
    "ARMS",
    "LoopSettings",
    "autonomous",
    "kernel_agent",
    "kernelseek",
    "kernelseek_bank",
    "kernelseek_model",
    "open_ended",
    "scripted",
]

ARMS: dict[str, Callable[..., Solver]] = {
    "kernel_agent": kernel_agent,
    "kernelseek": kernelseek,
    "kernelseek_bank": kernelseek_bank,
    "kernelseek_model": kernelseek_model,
    "scripted": scripted,
    "open_ended": open_ended,
    "autonomous": autonomous,
}
"""Every arm by its registered name (``--solver NAME``)."""
