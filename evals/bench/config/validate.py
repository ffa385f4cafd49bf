"""Checking a task's settings against its target before Inspect builds the task."""

from __future__ import annotations

from typing import get_args

from evals.bench.config.settings import TaskSettings
from evals.bench.config.targets import TARGETS
from evals.bench.config.task_args import SandboxKind
from evals.harness import HarnessInputError, get_target

__all__ = ["TaskArgumentError", "validate"]

POSITIVE = (
    "attempts",
    "message_limit",
    "token_limit",
    "time_limit",
    "evaluations",
    "check_timeout",
    "score_timeout",
)


class TaskArgumentError(ValueError):
    """A task argument is invalid; the message is one line saying which and why."""


def validate(settings: TaskSettings) -> None:
    """Check every setting against the target; raise :class:`TaskArgumentError` if wrong."""
    descriptor = TARGETS.get(settings.target)
    if descriptor is None:
        raise TaskArgumentError(f"unknown target {settings.target!r}")
    if descriptor.unavailable is not None:
        raise TaskArgumentError(descriptor.unavailable)
    try:
        target = get_target(settings.target)
    except HarnessInputError as exc:
        raise TaskArgumentError(exc.failure.reason) from None
    for name in ("suite", "score_suite"):
        value = getattr(settings, name)
        if value not in target.suite_names:
            known = ", ".join(target.suite_names)
            raise TaskArgumentError(f"{name}={value!r} is not a suite of {target.name} ({known})")
    upstreams = [u.name for u in target.upstreams] + ["fastest"]
    if settings.upstream not in upstreams:
        raise TaskArgumentError(f"upstream={settings.upstream!r}: choose one of {upstreams}")
    if settings.sandbox not in get_args(SandboxKind):
        raise TaskArgumentError(f"sandbox={settings.sandbox!r}: choose local, docker or k8s")
    for name in POSITIVE:
        value = getattr(settings, name)
        if value is not None and (not isinstance(value, int) or value < 1):
            raise TaskArgumentError(f"{name} must be a positive integer, got {value!r}")
    if not isinstance(settings.seed_offset, int) or settings.seed_offset < 0:
        raise TaskArgumentError(f"seed_offset must be >= 0, got {settings.seed_offset!r}")
