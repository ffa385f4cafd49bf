"""Where one harness run's time went, logged into the sample's transcript for each run.

A study shares each GPU between samples: builds and agent turns overlap, while the harness's
device lock admits one measurement at a time. Each tool or scorer run of the harness therefore
leaves one ``harness_run`` info event (source ``kernelseek``) with its :class:`RunCost`, read
back by :func:`run_costs` (``benchmarks/concurrency.py`` turns them into evaluations per GPU-hour,
lock waits and the share of lock-held time spent timing kernels).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from evals.harness.measurement.device_lock import LockRecord
from evals.harness.verdict.record import Verdict

__all__ = ["EVENT_KEY", "RunCost", "run_costs"]

EVENT_KEY = "harness_run"


def _seconds(found: object) -> float:
    return float(found) if isinstance(found, int | float) else 0.0


@dataclass(frozen=True, kw_only=True)
class RunCost:
    """One harness run, in wall seconds (``*_s``) and wall-clock instants (``*_at``, epoch s).

    Attributes:
        command: ``check``, ``bench`` or ``score``.
        status: The verdict's status (``ok``, ``failed``, ``error``), or ``none`` without one.
        gpu: The leased GPU (UUID or index), or None.
        wall_s: The harness's own wall time, build included.
        build_s: Seconds building the candidate (0 when the build came from the cache).
        lock_waited_s: Seconds waiting for the device lock while another run measured (for
            the shared hold of a GPU run's checks, then the exclusive one).
        lock_held_s: Seconds holding the device lock exclusive (0 where the run never took it).
        shared_held_s: Seconds a GPU run held it shared, checking beside other runs' checks.
        acquired_at: When the lock was taken (None where it never was).
        timed_calls_s: Busy seconds of the timed kernel calls, candidate's and upstreams', as
            the workers report them (the candidate's own process among them): display only.
    """

    command: str
    status: str
    gpu: str | None = None
    wall_s: float = 0.0
    build_s: float = 0.0
    lock_waited_s: float = 0.0
    lock_held_s: float = 0.0
    shared_held_s: float = 0.0
    acquired_at: float | None = None
    timed_calls_s: float = 0.0

    @classmethod
    def from_verdict(
        cls, command: str, verdict: Verdict | None, *, gpu: str | None = None
    ) -> RunCost:
        """The cost of a run from its checked verdict (None: a run that left no verdict)."""
        if verdict is None:
            return cls(command=command, status="none", gpu=gpu)
        timing = verdict.timing
        lock = verdict.lock or LockRecord.from_json(None)
        shared = verdict.check_lock or LockRecord.from_json(None)
        return cls(
            command=command,
            status=str(verdict.status),
            gpu=gpu,
            wall_s=_seconds(timing.get("wall_s")),
            build_s=_seconds(timing.get("build_s")),
            lock_waited_s=lock.waited_s + shared.waited_s,
            lock_held_s=lock.held_s,
            shared_held_s=shared.held_s,
            acquired_at=lock.acquired_at or None,
            timed_calls_s=_seconds(timing.get("candidate_calls_s"))
            + _seconds(timing.get("upstream_calls_s")),
        )

    def to_json(self) -> dict[str, Any]:
        """JSON form (the event's payload under :data:`EVENT_KEY`)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunCost:
        """Read back :meth:`to_json`; unknown keys are ignored (newer writers)."""
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in known})


def run_costs(events: Iterable[Any]) -> list[RunCost]:
    """The :class:`RunCost` of each ``harness_run`` info event among a sample's ``events``."""
    found = []
    for event in events:
        data = getattr(event, "data", None)
        payload = data.get(EVENT_KEY) if isinstance(data, dict) else None
        if getattr(event, "event", None) == "info" and isinstance(payload, dict):
            found.append(RunCost.from_json(payload))
    return found
