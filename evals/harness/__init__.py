"""The scoring harness: turns a candidate kernel into a verdict (correctness and speed).

Runs inside sandboxes and depends on torch and numpy only (never on inspect-ai). The names
below load on first use, so a process that needs one small module of the package (the
confinement launcher that runs a compiler, :mod:`evals.harness.sandbox.confine`) does not import
torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evals.harness.contract.scenarios import Scenario, Suite, load_suite
    from evals.harness.pipeline.run_settings import RunSettings
    from evals.harness.pipeline.runner import evaluate
    from evals.harness.targets import Target, get_target, target_names
    from evals.harness.verdict.failures import Code, Failure, HarnessInputError
    from evals.harness.verdict.record import VERDICT_SCHEMA, ScenarioResult, Verdict

_HOMES = {
    "evals.harness.verdict.failures": ("Code", "Failure", "HarnessInputError"),
    "evals.harness.pipeline.run_settings": ("RunSettings",),
    "evals.harness.pipeline.runner": ("evaluate",),
    "evals.harness.contract.scenarios": ("Scenario", "Suite", "load_suite"),
    "evals.harness.targets": ("Target", "get_target", "target_names"),
    "evals.harness.verdict.record": ("VERDICT_SCHEMA", "ScenarioResult", "Verdict"),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
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
