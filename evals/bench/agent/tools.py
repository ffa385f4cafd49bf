"""Tools the agent has besides a shell: ``check``, ``bench`` and ``submit``."""

from __future__ import annotations

from inspect_ai.tool import Tool, tool

from evals.bench.config.budget import budgeted_harness
from evals.bench.config.settings import TaskSettings

MAX_TABLE_CHARS = 6000


def _report(table: str, error: str | None) -> str:
    text = table if len(table) <= MAX_TABLE_CHARS else table[:MAX_TABLE_CHARS] + "\n[...]"
    return f"{text}\n{error}" if error else text


@tool
def check(settings: TaskSettings) -> Tool:
    """Build the kernel and verify it on the work suite."""

    async def execute() -> str:
        """Build your kernel and check it for correctness on every scenario of the dev suite.

        Returns:
            A table: per scenario, correct or not, max error and tolerance; failures with reasons.
        """
        run = await budgeted_harness(
            settings, "check", suite=settings.suite, timeout=settings.check_timeout
        )
        return _report(run.table, run.error)

    return execute


@tool
def bench(settings: TaskSettings) -> Tool:
    """Check, then time the kernel against the upstream(s) on the work suite."""

    async def execute() -> str:
        """Check your kernel, then time it against the upstream implementation(s) on the dev suite.

        Returns:
            A table: per scenario, correctness, time in microseconds for your kernel and each
            upstream, speedups; then the geometric-mean speedup.
        """
        run = await budgeted_harness(
            settings, "bench", suite=settings.suite, timeout=settings.check_timeout
        )
        return _report(run.table, run.error)

    return execute


@tool
def submit() -> Tool:
    """Claim completion; the kernel is then verified (and sent back if it fails)."""

    async def execute() -> str:
        """Submit the kernel in your working directory as your final answer.

        It is verified on the dev suite; if verification fails you get the report and must
        continue working.

        Returns:
            An acknowledgement.
        """
        return "Submitted for verification."

    return execute
