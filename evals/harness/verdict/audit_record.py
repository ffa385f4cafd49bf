"""The record of one audited timing round and the settings of its bound.

:mod:`evals.harness.clock_checks.round_audit` makes these (the audit itself and why); the run's
:class:`evals.harness.worker_link.session.Session` keeps each scenario's until the verdict is
written.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AUDIT", "AuditSettings", "RoundAudit"]


@dataclass(frozen=True)
class AuditSettings:
    """How far a timing round's time on the parent's clock may exceed what its calls reported.

    Attributes:
        tolerance: Relative excess over the reported busy time allowed (0.25 = 25%).
        overhead_share: Share of the null round's time allowed on top: the rounds run in two
            processes, one after the other, so making inputs and fresh queries costs about,
            not exactly, the same.
        margin_us: Microseconds allowed per call (timer granularity, a call's own dispatch).
        rounds: Rounds tried (each on new inputs) until one is explained: a burst of load
            during one round passes on the next, a forged clock fails them all.
        fail_factor: Where every round tried falls short by at least this factor the
            scenario fails (``timing_mismatch``); otherwise the last round's candidate figures
            are scaled up by its own factor (a busy host's honest rounds came out at up to
            1.3, and a 35 ms round beside two test runs on two cores at 1.57).
    """

    tolerance: float = 0.25
    overhead_share: float = 0.25
    margin_us: float = 40.0
    rounds: int = 3
    fail_factor: float = 1.5


AUDIT = AuditSettings()


@dataclass(frozen=True)
class RoundAudit:
    """One candidate timing round on the parent's clock, beside its null round.

    Attributes:
        wall_s: The candidate's ``time`` request on the parent's clock, seconds.
        null_s: The same round with a kernel that does nothing, in the upstreams' worker.
        busy_s: Seconds the round's candidate calls reported (warm-up included).
        calls: Candidate calls the round made (warm-up and timed).
        settings: The bound's settings.
    """

    wall_s: float
    null_s: float
    busy_s: float
    calls: int
    settings: AuditSettings = AUDIT

    @property
    def bound_s(self) -> float:
        """What ``wall_s - null_s`` may be (the module's formula)."""
        s = self.settings
        return (
            (1 + s.tolerance) * self.busy_s
            + s.overhead_share * self.null_s
            + self.calls * s.margin_us * 1e-6
        )

    @property
    def factor(self) -> float:
        """How many times the reports must grow to explain the round (1: they do)."""
        s = self.settings
        unexplained = self.wall_s - self.null_s - self.bound_s
        if unexplained <= 0:
            return 1.0
        return 1.0 + unexplained / max((1 + s.tolerance) * self.busy_s, 1e-9)

    def to_json(self) -> dict[str, float | int]:
        """The verdict's record of the round."""
        return {
            "wall_s": self.wall_s,
            "null_s": self.null_s,
            "busy_s": self.busy_s,
            "calls": self.calls,
            "bound_s": self.bound_s,
            "factor": self.factor,
        }

    def reason(self) -> str:
        """One line on a round its reports do not explain."""
        return (
            f"the parent's clock saw a timing round of {self.calls} calls take "
            f"{self.wall_s:.4f} s, {self.wall_s - self.null_s:.4f} s beyond the same round with "
            f"no kernel, while its calls reported {self.busy_s:.4f} s (allowed: "
            f"{self.bound_s:.4f} s; {self.factor:.2f}x)"
        )
