"""The harness's view of the targets, each found in its folder (:mod:`evals.targets`).

A target's code is imported only when it is asked for, so a CPU machine never imports GPU code.
Loaded by the parent and by both workers: the parent builds inputs and the float64 reference
from a target (``attention`` holds the shared math), the workers make the calls. What a target's
hooks return inside the candidate's worker is the candidate's to forge. Beside ``base`` (the
interface): ``source_policy`` (what candidates may include and link against), ``draw_space``
(the space a contract scenario is drawn in) and ``guards`` (the checks around each call in the
workers: inputs left untouched, outputs fresh).
"""

from __future__ import annotations

import importlib

from evals.harness.failures import Code, Failure, HarnessInputError
from evals.harness.targets.base import (
    AccuracyRule,
    BuildSpec,
    Contract,
    Inputs,
    OutputSpec,
    Target,
    Upstream,
    Work,
    WorkerLimits,
)
from evals.targets import target_folder, target_folders


def target_names() -> tuple[str, ...]:
    """Names of all targets (the folders under :mod:`evals.targets`)."""
    return tuple(target_folders())


def get_target(name: str) -> Target:
    """Instantiate the target called ``name`` (the class its ``target.toml`` names).

    Raises:
        HarnessInputError: No target has that name.

    """
    try:
        folder = target_folder(name)
    except KeyError:
        known = ", ".join(target_names())
        raise HarnessInputError(
            Failure(Code.UNKNOWN_TARGET, f"unknown target {name!r} (known: {known})")
        ) from None
    module = importlib.import_module(folder.harness_module)
    target: Target = getattr(module, folder.harness_class)()
    return target


__all__ = [
    "AccuracyRule",
    "BuildSpec",
    "Contract",
    "Inputs",
    "OutputSpec",
    "Target",
    "Upstream",
    "Work",
    "WorkerLimits",
    "get_target",
    "target_names",
]
