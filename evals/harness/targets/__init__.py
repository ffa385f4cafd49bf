"""The target registry. Targets are imported lazily, so a CPU machine never imports GPU code."""

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

_REGISTRY: dict[str, str] = {
    "cpu_attention": "evals.harness.targets.cpu_attention:CpuAttention",
    "fa3_hopper": "evals.harness.targets.fa3_hopper:Fa3Hopper",
}


def target_names() -> tuple[str, ...]:
    """Names of all registered targets."""
    return tuple(sorted(_REGISTRY))


def get_target(name: str) -> Target:
    """Instantiate the target called ``name``.

    Raises:
        HarnessInputError: No target has that name.

    """
    try:
        module_name, cls_name = _REGISTRY[name].split(":")
    except KeyError:
        known = ", ".join(target_names())
        raise HarnessInputError(
            Failure(Code.UNKNOWN_TARGET, f"unknown target {name!r} (known: {known})")
        ) from None
    target: Target = getattr(importlib.import_module(module_name), cls_name)()
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
