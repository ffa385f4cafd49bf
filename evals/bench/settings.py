"""Resolved settings of a KernelSeek task, logged into every transcript."""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass
from typing import Any, Literal

SandboxKind = Literal["local", "docker", "k8s"]
TARGET_FILES: dict[str, tuple[str, str]] = {
    # target -> (kernel file name in the workspace, default upstream of the score)
    "cpu_attention": ("kernel.cpp", "sdpa"),
    "fa3_hopper": ("kernel.cu", "fa3"),
}


@dataclass(frozen=True)
class TaskSettings:
    """Everything that defines one task run.

    Attributes:
        target: Harness target name.
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
        check_timeout: Seconds for one ``check`` or ``bench`` tool call.
        score_timeout: Seconds for the final score.
    """

    target: str
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
    check_timeout: int = 900
    score_timeout: int = 3600

    @property
    def kernel_file(self) -> str:
        """The candidate's file name, relative to the sandbox's working directory."""
        return TARGET_FILES[self.target][0]

    def harness_command(self) -> list[str]:
        """How to start the harness inside the sandbox.

        In the local sandbox this is the interpreter running Inspect (where ``evals`` is
        installed); in container sandboxes the image's ``python3``.
        """
        python = sys.executable if self.sandbox == "local" else "python3"
        return [python, "-P", "-m", "evals.harness"]  # -P: the workspace never shadows evals

    def to_json(self) -> dict[str, Any]:
        """JSON form, logged into the transcript and the task metadata."""
        return {**asdict(self), "kernel_file": self.kernel_file}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TaskSettings:
        """Inverse of :meth:`to_json`."""
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})
