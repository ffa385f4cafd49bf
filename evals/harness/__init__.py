"""The scoring harness: turns a candidate kernel into a verdict (correctness and speed).

Runs inside sandboxes and depends on torch and numpy only (never on inspect-ai). The names
below load on first use, so a process that needs one small module of the package (the
confinement launcher that runs a compiler, :mod:`evals.harness.sandbox.confine`) does not import
torch.

The package's rooms, in :data:`LAYOUT` order: each imports only the modules at the package's
top (``failures``, ``scenarios``, ``run_settings``: the words every process shares) and the
rooms before it, so a ``score`` flows one way, from ``pipeline`` down (a test holds the order).
Which process runs each room is in its own docstring and in THREATS.md's map.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evals.harness.failures import Code, Failure, HarnessInputError
    from evals.harness.pipeline.runner import evaluate
    from evals.harness.run_settings import RunSettings
    from evals.harness.scenarios import Scenario, Suite, load_suite
    from evals.harness.targets import Target, get_target, target_names
    from evals.harness.verdict.record import VERDICT_SCHEMA, ScenarioResult, Verdict

_HOMES = {
    "evals.harness.failures": ("Code", "Failure", "HarnessInputError"),
    "evals.harness.run_settings": ("RunSettings",),
    "evals.harness.pipeline.runner": ("evaluate",),
    "evals.harness.scenarios": ("Scenario", "Suite", "load_suite"),
    "evals.harness.targets": ("Target", "get_target", "target_names"),
    "evals.harness.verdict.record": ("VERDICT_SCHEMA", "ScenarioResult", "Verdict"),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}

LAYOUT = (
    "measurement",
    "targets",
    "verification",
    "verdict",
    "sandbox",
    "building",
    "static",
    "contract",
    "worker_link",
    "tracing",
    "clock_checks",
    "worker",
    "judging",
    "pipeline",
)
"""The sub-packages from the lowest to the highest: timing and the device lock; the targets
and their policies; checks of outputs; the verdict's records; confinement; the build; the
static checks; the contract's draws; the parent's link to its workers; the trace; the parent's
clock checks; the worker program; judging; the run from the command line."""

__all__ = [
    "LAYOUT",
    "VERDICT_SCHEMA",
    "Code",
    "Failure",
    "HarnessInputError",
    "RunSettings",
    "Scenario",
    "ScenarioResult",
    "Suite",
    "Target",
    "Verdict",
    "evaluate",
    "get_target",
    "load_suite",
    "target_names",
]


def __getattr__(name: str) -> Any:
    """Import ``name``'s module on first use (PEP 562)."""
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
