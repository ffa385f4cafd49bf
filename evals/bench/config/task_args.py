"""The arguments every task takes (``-T NAME=VALUE``); each target's defaults are one of these."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["LOCAL_WARNING", "Isolation", "SandboxKind", "TaskArgs", "isolation_of"]

SandboxKind = Literal["local", "docker", "k8s"]
Isolation = Literal["container", "local"]
"""What separated the agent from the scorer, recorded in every score's metadata (``isolation``).

``container``: the agent worked in a ``docker`` or ``k8s`` sandbox, a container where it is an
unprivileged user (``sandboxes/README.md`` says what keeps it from the scorer there). ``local``:
the agent's shell and the harness ran as one user on one host; nothing kept the agent from the
scorer, so the score is not tamper-proof.
"""

LOCAL_WARNING = (
    "sandbox=local: the agent and the scorer share a user and a host; scores are not "
    "tamper-proof and are marked isolation=local"
)
"""The one line a run in the local sandbox logs at the start of each sample."""


def isolation_of(sandbox: SandboxKind) -> Isolation:
    """The isolation a sandbox kind gives: ``local`` for ``local``, else ``container``."""
    return "local" if sandbox == "local" else "container"


@dataclass(frozen=True, kw_only=True)
class TaskArgs:
    """The arguments every task takes (``-T NAME=VALUE``); a target's defaults are one of these.

    Attributes:
        suite: The suite the agent may check and bench on, and that verifies a submission.
        score_suite: The suite of the final score (secret seed).
        upstream: The upstream the ``speedup`` score is against (or ``fastest``).
        sandbox: ``local`` (no isolation: the agent and the scorer share a user and a host,
            see :data:`Isolation`), ``docker`` or ``k8s``.
        attempts: Submissions allowed; a failed verification sends the agent back to work.
        message_limit: Messages of the agent's loop (see :mod:`evals.bench.config.budget`).
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

    @property
    def isolation(self) -> Isolation:
        """What separates the agent from the scorer in this run's sandbox."""
        return isolation_of(self.sandbox)
