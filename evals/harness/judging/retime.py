"""When a timing is an outlier, and what a re-time may change: the decisions, no requests.

Speedups compare figures taken at different moments: the candidate's in its own worker while
the suite is judged, the upstreams' later, once the candidate's process is gone. On a shared
machine a burst of load can land on one side only: an upstream median 80-120x its quiet value
once lifted a plain kernel to a 1.98x geomean, and a strict re-run that re-timed the candidate
alone rejected an honest kernel whose first upstream figure had been such an outlier. So:

- an upstream round whose median is far above its own fastest call was disturbed: the
  upstream is timed again at another moment, and each upstream keeps its lower median (load
  only adds time; the upstream is trusted code);
- a scenario whose speedup is far above the candidate's median speedup over the suite, or
  suspicious outright, is re-timed side by side: the candidate in a fresh process, killed,
  then the upstreams on the same inputs right after, and judged by the ratio;
- a re-time never raises a speedup: of the first figures and the side-by-side ones, the pair
  with the lower speedup counts;
- the strict re-run rejects only when the candidate slowed in a fresh process by more than
  the upstream's own figures show the machine slowed, in every one of its side-by-side rounds
  (four: load lands on one side by chance, state only the first process had slows them all).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from evals.harness.measurement.timing import TimingStats
from evals.harness.verdict.record import ScenarioResult

UPSTREAM_SPREAD = 2.0
"""An upstream round whose median is over this many times its fastest call was disturbed by
load (a quiet round's median stays within about 1.3x of its minimum); it is timed again."""
PATTERN_FACTOR = 3.0
"""A scenario whose speedup over an upstream is over this many times the candidate's median
speedup over that upstream (across the suite's timed scenarios) is re-timed side by side."""
PATTERN_MIN_SCENARIOS = 3
"""Scenarios with a speedup over an upstream needed before its median means anything."""


@dataclass(frozen=True)
class Retime:
    """One re-time of a scenario, as the verdict records it (``timing['retimes']``).

    Attributes:
        why: What triggered it (``upstream spread``, ``speedup pattern``, ``strict re-run``).
        side: ``upstreams`` (they alone were timed again) or ``both`` (side by side).
        before_us: Medians before, per implementation, microseconds.
        after_us: Medians the re-time measured, per implementation, microseconds.
        counted: Which figures count now: ``first``, ``re-time`` or, for an upstream-only
            re-time, ``lower`` (each upstream its lower median).
    """

    why: str
    side: str
    before_us: Mapping[str, float]
    after_us: Mapping[str, float]
    counted: str

    def to_json(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "why": self.why,
            "side": self.side,
            "before_us": dict(self.before_us),
            "after_us": dict(self.after_us),
            "counted": self.counted,
        }

    def note(self) -> str:
        """One line for the scenario's flags."""
        names = [n for n in self.after_us if n in self.before_us]
        moves = ", ".join(
            f"{n} {self.before_us[n]:.1f} -> {self.after_us[n]:.1f} us" for n in names
        )
        return f"re-timed ({self.why}, {self.side}): {moves}; counted: {self.counted}"


def record(result: ScenarioResult, retime: Retime) -> None:
    """Add ``retime`` to the scenario's timing record and flags."""
    result.timing.setdefault("retimes", []).append(retime.to_json())
    result.flags.append(retime.note())


def disturbed(stats: Mapping[str, TimingStats]) -> list[str]:
    """Upstreams whose round was disturbed: median over :data:`UPSTREAM_SPREAD` x minimum."""
    return [
        name
        for name, st in stats.items()
        if name != "candidate" and st.min_us > 0 and st.median_us > UPSTREAM_SPREAD * st.min_us
    ]


def keep_lower(
    times: dict[str, TimingStats], again: Mapping[str, TimingStats], names: Iterable[str]
) -> None:
    """For each upstream in ``names``, keep whichever of its two rounds has the lower median."""
    for name in names:
        if name in again and name in times and again[name].median_us < times[name].median_us:
            times[name] = again[name]


def pattern_outliers(results: list[ScenarioResult], upstreams: Iterable[str]) -> list[int]:
    """Indices of correct scenarios whose speedup is far above the candidate's median.

    Far above: over :data:`PATTERN_FACTOR` x the median speedup over the same upstream
    across the correct scenarios timed against it (at least :data:`PATTERN_MIN_SCENARIOS`).
    """
    flagged: set[int] = set()
    for name in upstreams:
        per = {i: r.speedup(name) for i, r in enumerate(results) if r.correct}
        known = {i: s for i, s in per.items() if s is not None}
        if len(known) < PATTERN_MIN_SCENARIOS:
            continue
        median = statistics.median(known.values())
        flagged.update(i for i, s in known.items() if s > PATTERN_FACTOR * median)
    return sorted(flagged)


def speedup_of(times: Mapping[str, TimingStats], upstream: str) -> float | None:
    """Upstream median over candidate median in one round's figures, or None."""
    cand, up = times.get("candidate"), times.get(upstream)
    if cand is None or up is None or cand.median_us <= 0:
        return None
    return up.median_us / cand.median_us


@dataclass
class Side:
    """One side-by-side round: the candidate's figures, then the upstreams' on the same inputs.

    Attributes:
        times: Device-time stats of the candidate and the upstreams.
        headers: The two workers' timing answers (candidate first), merged into the result
            when this round's figures come to count.
    """

    times: dict[str, TimingStats]
    headers: list[dict[str, Any]] = field(default_factory=list)


def slow_down(
    *, first_us: float, again_us: float, upstream_us: float, upstream_best_us: float
) -> float:
    """How much more the candidate slowed in a fresh process than the machine did (a ratio).

    The machine's slow-down is the upstream's figure in the same side-by-side round over its
    best figure on this scenario (load only adds time); the candidate's is its fresh figure
    over its first. Ratios, not absolute times: both slowing together gives 1 or less.
    """
    machine = max(1.0, upstream_us / upstream_best_us) if upstream_best_us > 0 else 1.0
    return again_us / (machine * first_us) if first_us > 0 else float("inf")


def slowed_alone(
    *,
    first_us: float,
    again_us: float,
    upstream_us: float,
    upstream_best_us: float,
    tolerance: float,
) -> bool:
    """Whether :func:`slow_down` is over 1 by more than ``tolerance`` (0.25: 25%)."""
    excess = slow_down(
        first_us=first_us,
        again_us=again_us,
        upstream_us=upstream_us,
        upstream_best_us=upstream_best_us,
    )
    return excess > 1.0 + tolerance
