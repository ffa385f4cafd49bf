"""Running the harness inside the sample's sandbox."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from inspect_ai.util import sandbox

from evals.bench.settings import TaskSettings

RESULTS_DIR = ".kernelseek"


@dataclass(frozen=True)
class HarnessRun:
    """One harness invocation: its exit status, table, and verdict (None if unreadable)."""

    returncode: int
    table: str
    verdict: dict[str, Any] | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Every scenario correct."""
        return self.returncode == 0 and self.verdict is not None


async def read_verdict(command: Literal["check", "bench", "score"]) -> dict[str, Any] | None:
    """The verdict the last ``command`` tool call left in the workspace, or None."""
    try:
        verdict: dict[str, Any] = json.loads(
            await sandbox().read_file(f"{RESULTS_DIR}/{command}.json")
        )
    except Exception:
        return None
    return verdict


async def run_harness(
    settings: TaskSettings,
    command: Literal["check", "bench", "score"],
    *,
    suite: str,
    timeout: int,
) -> HarnessRun:
    """Run ``python -m evals.harness COMMAND`` on the workspace kernel; never raises."""
    out = f"{RESULTS_DIR}/{command}.json"
    cmd = [
        *settings.harness_command(),
        command,
        "--target",
        settings.target,
        "--kernel",
        settings.kernel_file,
        "--suite",
        suite,
        "--json",
        out,
        "--quiet",
    ]
    sb = sandbox()
    try:
        await sb.exec(["mkdir", "-p", RESULTS_DIR], timeout=60)
        result = await sb.exec(cmd, timeout=timeout)
    except TimeoutError:
        return HarnessRun(-1, "", None, f"the harness did not finish within {timeout} s")
    except Exception as exc:  # a broken sandbox must not fail the eval
        return HarnessRun(-1, "", None, f"sandbox error: {type(exc).__name__}: {exc}")
    table = (result.stdout or "").strip()
    try:
        verdict = json.loads(await sb.read_file(out))
    except Exception as exc:
        tail = (result.stderr or "").strip().splitlines()[-3:]
        reason = f"no verdict ({type(exc).__name__}); harness said: {' | '.join(tail)}"
        return HarnessRun(result.returncode, table, None, reason)
    return HarnessRun(result.returncode, table, verdict)
