"""Scenario suites: data files listing scenarios, each with a stable id and its parameters."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from evals.harness.failures import Code, Failure, HarnessInputError

SUITE_FORMAT = "kernelseek.suite/1"


@dataclass(frozen=True)
class Scenario:
    """One scenario of a suite.

    Attributes:
        id: Stable identifier, unique within the target's suites.
        params: The scenario's parameters (JSON values); the target interprets them.
        contract: A contract scenario (a clause of the contract the study's configurations
            never try, fixed in the suite or drawn from the run's seed): it gates correctness
            like any other, and its speed is reported apart from the headline geomean.
        drawn: Drawn at random from the run's seed (:mod:`evals.harness.contract.contract_draw`),
            not listed in the suite file.
        covering: A row of the run's covering set (:mod:`evals.harness.contract.contract_cover`):
            verified and probed, never timed (a contract scenario's speed enters no figure,
            and timing every row cost more than the rest of a smoke run's contract checks).

    """

    id: str
    params: Mapping[str, Any] = field(default_factory=dict)
    contract: bool = False
    drawn: bool = False
    covering: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    def to_json(self) -> dict[str, Any]:
        """Return ``{"id", "params", "contract", "drawn", "covering"}`` (JSON values)."""
        return {
            "id": self.id,
            "params": dict(self.params),
            "contract": self.contract,
            "drawn": self.drawn,
            "covering": self.covering,
        }


@dataclass(frozen=True)
class Suite:
    """A named, ordered collection of scenarios loaded from a data file."""

    name: str
    scenarios: tuple[Scenario, ...]

    @property
    def ids(self) -> tuple[str, ...]:
        """Scenario ids in suite order."""
        return tuple(s.id for s in self.scenarios)


def load_suite(path: Path, name: str) -> Suite:
    """Load and validate a suite file.

    The file is JSON: ``{"format": "kernelseek.suite/1", "scenarios": [{"id", "params"}]}``;
    an entry with ``"contract": true`` is a contract scenario.

    Raises:
        HarnessInputError: The file is missing, malformed, or has duplicate ids.

    """
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise HarnessInputError(
            Failure(Code.UNKNOWN_SUITE, f"suite file not found: {path}")
        ) from exc
    except json.JSONDecodeError as exc:
        raise HarnessInputError(Failure(Code.BAD_ARGUMENT, f"suite {path}: {exc}")) from exc
    if not isinstance(doc, dict) or doc.get("format") != SUITE_FORMAT:
        raise HarnessInputError(
            Failure(Code.BAD_ARGUMENT, f"suite {path}: expected format {SUITE_FORMAT!r}")
        )
    scenarios: list[Scenario] = []
    seen: set[str] = set()
    for entry in doc.get("scenarios", []):
        sid = entry.get("id") if isinstance(entry, dict) else None
        if not isinstance(sid, str) or not sid:
            raise HarnessInputError(Failure(Code.BAD_ARGUMENT, f"suite {path}: entry without id"))
        if sid in seen:
            raise HarnessInputError(Failure(Code.BAD_ARGUMENT, f"suite {path}: duplicate id {sid}"))
        seen.add(sid)
        contract = entry.get("contract", False)
        if not isinstance(contract, bool):
            raise HarnessInputError(
                Failure(Code.BAD_ARGUMENT, f"suite {path}: {sid}: contract must be true or false")
            )
        scenarios.append(Scenario(id=sid, params=entry.get("params", {}), contract=contract))
    if not scenarios:
        raise HarnessInputError(Failure(Code.BAD_ARGUMENT, f"suite {path}: no scenarios"))
    return Suite(name=name, scenarios=tuple(scenarios))
