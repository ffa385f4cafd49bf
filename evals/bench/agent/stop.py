"""The stop condition: a claim of completion is verified; a failure sends the agent back."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from inspect_ai.log import transcript
from inspect_ai.util import sandbox, store

from evals.bench.config.settings import TaskSettings
from evals.bench.scoring.faults import HarnessFault
from evals.bench.scoring.harness_exec import run_harness

CACHE_KEY = "kernelseek:verifications"
MAX_REPORT_CHARS = 6000


@dataclass(frozen=True)
class Verification:
    """Outcome of verifying a submission.

    Attributes:
        accepted: The kernel passed every scenario of the work suite.
        message: What the agent is told when it is sent back.
        exhausted: No attempts are left.
    """

    accepted: bool
    message: str
    exhausted: bool


class StopCondition:
    """Verifies submissions on the work suite, caching results by kernel hash."""

    def __init__(self, settings: TaskSettings, attempts: int) -> None:
        self.settings = settings
        self.attempts = attempts
        self.used = 0

    async def verify(self) -> Verification:
        """Verify the kernel now in the workspace (dev-suite ``check``).

        Raises:
            HarnessFault: The check failed for the environment's or the harness's reasons.
        """
        self.used += 1
        try:
            source = await sandbox().read_file(self.settings.kernel_file, text=False)
        except Exception as exc:
            return self._verdict(False, f"cannot read {self.settings.kernel_file}: {exc}", None)
        key = hashlib.sha256(source).hexdigest()
        cache: dict[str, tuple[bool, str]] = store().get(CACHE_KEY, {})
        if key not in cache:
            run = await run_harness(
                self.settings,
                "check",
                suite=self.settings.suite,
                timeout=self.settings.check_timeout,
            )
            if run.fault is not None:  # not the candidate's doing: the sample errors
                raise HarnessFault(run.fault)
            report = run.table if run.error is None else f"{run.table}\n{run.error}"
            cache[key] = (run.ok, report[-MAX_REPORT_CHARS:])
            store().set(CACHE_KEY, cache)
        ok, report = cache[key]
        return self._verdict(ok, report, key)

    def _verdict(self, ok: bool, report: str, key: str | None) -> Verification:
        exhausted = not ok and self.used >= self.attempts
        left = self.attempts - self.used
        if ok:
            message = "Verified on the dev suite. Your submission is accepted."
        else:
            message = (
                f"Your submission failed verification on the {self.settings.suite} suite "
                f"({left} submission(s) left). Fix it and submit again.\n\n{report}"
            )
        transcript().info(
            {
                "stop_condition": {
                    "accepted": ok,
                    "attempt": self.used,
                    "attempts": self.attempts,
                    "kernel_sha256": key,
                    "exhausted": exhausted,
                }
            },
            source="kernelseek",
        )
        return Verification(ok, message, exhausted)
