"""Resolved settings of a KernelSeek task run, logged into every transcript."""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass
from typing import Any

from evals.bench.config.targets import bench_target
from evals.bench.config.task_args import (
    LOCAL_WARNING,
    Isolation,
    SandboxKind,
    TaskArgs,
    isolation_of,
)

__all__ = ["LOCAL_WARNING", "Isolation", "SandboxKind", "TaskArgs", "TaskSettings", "isolation_of"]


@dataclass(frozen=True, kw_only=True)
class TaskSettings(TaskArgs):
    """Everything that defines one task run: the task's arguments, its target, its timeouts.

    Attributes:
        target: Harness target name (a key of :data:`evals.bench.config.targets.TARGETS`).
        check_timeout: Seconds for one ``check`` or ``bench`` tool call.
        score_timeout: Seconds for the final score.
    """

    target: str
    check_timeout: int = 900
    score_timeout: int = 3600

    @property
    def kernel_file(self) -> str:
        """The candidate's file name, relative to the sandbox's working directory."""
        return bench_target(self.target).kernel_file

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
