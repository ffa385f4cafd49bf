"""Whose fault a harness run's failure is: the candidate's, the environment's or the harness's.

A candidate's own failure (its code does not build, gives wrong results, crashes, the kernel
file is gone) scores 0 with the reason. A failure of the machine (no GPU, no CUDA toolkit, no
FA3, no compiler, a busy device, a broken sandbox) or of the harness itself (a crash, no verdict,
a verdict that fails its checks) says nothing about the agent: the scorer raises
:class:`HarnessFault` so Inspect records the sample as an error with the reason (``sample.error``)
and an eval set can retry it. The reason starts with :data:`ENVIRONMENT` or :data:`HARNESS`.
"""

from __future__ import annotations

from evals.harness.verdict.record import Verdict

ENVIRONMENT = "environment:"
"""Prefix of a fault of the machine the harness ran on (GPU, toolkit, compiler, device lock)."""
HARNESS = "harness_error:"
"""Prefix of a fault of the harness itself (a crash, no verdict, a verdict failing its checks)."""

ENVIRONMENT_CODES = frozenset({"environment", "device_busy"})
"""Failure codes of the machine's state, never the candidate's doing."""
HARNESS_CODES = frozenset({"harness_error", "unknown_target", "unknown_suite"})
"""Failure codes of the harness or its set-up (a task naming a target or suite it lacks)."""


class HarnessFault(RuntimeError):
    """The harness could not judge the candidate; the message starts with a fault prefix."""


def verdict_fault(verdict: Verdict) -> str | None:
    """The prefixed reason when a verdict's failure is the environment's or the harness's.

    Looks at the run-wide failure, then at each scenario's (a reference that failed on one
    scenario is the harness's side, not the kernel's). None: every failure is the candidate's.
    """
    failures = [verdict.failure, *(r.failure for r in verdict.results)]
    for failure in failures:
        if failure is None:
            continue
        code, reason = failure.code.value, failure.reason
        if code in ENVIRONMENT_CODES:
            return f"{ENVIRONMENT} [{code}] {reason}"
        if code in HARNESS_CODES:
            return f"{HARNESS} [{code}] {reason}"
    return None
