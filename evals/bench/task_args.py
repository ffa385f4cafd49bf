"""The arguments every task takes (``-T NAME=VALUE``); each target's defaults are one of these."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["SandboxKind", "TaskArgs"]

SandboxKind = Literal["local", "docker", "k8s"]


@dataclass(frozen=True, kw_only=True)
class TaskArgs:
    """The arguments every task takes (``-T NAME=VALUE``); a target's defaults are one of these.

    Attributes:
        suite: The suite the agent may check and bench on, and that verifies a submission.
        score_suite: The suite of the final score (secret seed).
        upstream: The upstream the ``speedup`` score is against (or ``fastest``).
        sandbox: ``local`` (no isolation), ``docker`` or ``k8s``.
        attempts: Submissions allowed; a failed verification sends the agent back to work.
        message_limit: Messages of the agent's loop (see :mod:`evals.bench.budget`).
        token_limit: Tokens of the agent model's generations (None: unlimited).
        time_limit: Working time of the sample, in seconds (None: unlimited).
        evaluations: Harness runs the agent may ask for (check, bench, profile).
        seed_offset: Added to the epoch to seed each run: a second run with
            ``seed_offset=n`` draws new seeds instead of repeating 1..n.
    """

    suite: str = "dev"
    score_suite: str = "full"
    upstream: str = "fa3"
    sandbox: SandboxKind = "docker"
    attempts: int = 3
    message_limit: int = 400
    token_limit: int | None = None
    time_limit: int | None = None
    evaluations: int = 60
    seed_offset: int = 0
