"""What one harness run is asked to do: its command, target, kernel, suite and options."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = ["Command", "RunSettings"]

Command = Literal["check", "bench", "score"]


@dataclass(frozen=True)
class RunSettings:
    """One harness invocation.

    Attributes:
        command: ``check`` (verify), ``bench`` (verify and time) or ``score`` (bench with a
            fresh secret seed).
        target: Target name.
        kernel: Candidate source file (None with ``candidate_upstream``).
        suite: Suite name.
        seed: Input seed for check and bench (random when None); score always draws its own.
        cache_dir: Build cache (default: ``building.cache_dir.default_cache_dir()``).
        call_timeout_s: Overrides the target's per-request timeout (seconds) when set.
        candidate_upstream: Self-check: judge this upstream as the candidate (e.g. ``fa3``),
            so its speedup over itself shows whether the timing is sound.
        scenario_ids: Judge only these scenarios of the suite (all when empty).
        lock_timeout_s: Seconds to wait for the device lock (another run judging on the same
            device, or on a CPU target also building) before giving up with ``device_busy``.
        keep_going: Judge every scenario even after the same crash, hang or exception on two
            scenarios in a row (by default the rest are skipped, and the verdict says so).
        keep_worker_log: Keep the workers' output (capped: head and tail) in this file (the
            upstreams' worker beside it); by default it is only read for crash reasons.
        time_budget_s: Seconds of the candidate's own time (its build and its worker's
            requests) after which it gets no more and no scenario starts
            (:mod:`evals.harness.worker_link.budget`; a caller with a limit of its own passes
            one below it); None: no budget.
    """

    command: Command
    target: str
    kernel: Path | None
    suite: str = "dev"
    seed: int | None = None
    cache_dir: Path | None = None
    call_timeout_s: float | None = None
    candidate_upstream: str | None = None
    scenario_ids: tuple[str, ...] = ()
    lock_timeout_s: float = 3600.0
    keep_going: bool = False
    keep_worker_log: Path | None = None
    time_budget_s: float | None = None

    def to_json(self) -> dict[str, object]:
        """JSON form, logged into the verdict."""
        data = dataclasses.asdict(self)
        return {k: str(v) if isinstance(v, Path) else v for k, v in data.items()}
