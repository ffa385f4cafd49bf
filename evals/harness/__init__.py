"""The scoring harness: turns a candidate kernel into a verdict (correctness and speed).

Runs inside sandboxes and depends on torch and numpy only (never on inspect-ai).
"""

from evals.harness.failures import Code, Failure, HarnessInputError
from evals.harness.runner import RunSettings, evaluate
from evals.harness.scenarios import Scenario, Suite, load_suite
from evals.harness.targets import Target, get_target, target_names
from evals.harness.verdict import VERDICT_SCHEMA, ScenarioResult, Verdict

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
