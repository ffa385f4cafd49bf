"""Per-arm summaries and pairwise comparisons computed from the dataset's measured rows.

Runs whose ``outcome`` is ``harness_error`` (the harness or the environment failed, not the
agent) are left out of every statistic and counted apart (``ArmSummary.excluded``). Runs that
count but were not scored in a container (``isolation`` ``local`` or ``unknown``) are counted
per arm (``ArmSummary.isolation``) and refused publication (:func:`publication_refusal`).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

from evals.results.rows import ISOLATED
from evals.stats import (
    Interval,
    epochs_needed,
    fast_p,
    geomean,
    geomean_ci,
    holm,
    holm_floor,
    min_p,
    permutation_test,
    pooled_sd_log,
    ratio_ci,
    sd_interval,
    successes,
    wilson,
)

STUDY_RATIO = 1.13 / 0.5  # the KERNELSEEK study's reported gap (n = 1 each)
SCORED = "scored"
HARNESS_ERROR = "harness_error"


@dataclass(frozen=True)
class ArmSummary:
    """One arm on one task and model: success and speed, reported separately.

    ``runs`` counts the runs kept (outcome ``scored``); ``excluded`` the harness errors left
    out; ``isolation`` the kept runs by isolation (``container``, ``local``, ``unknown``).
    Speedups are ratios (upstream time over candidate time).
    """

    arm: str
    runs: int
    excluded: int
    successes: int
    success_ci: tuple[float, float]
    geomean: float | None
    geomean_ci: Interval
    fast_1_0: float
    fast_1_1: float
    coverage: float | None
    categories: dict[str, float | None]
    speedups: list[float]
    isolation: dict[str, int]

    @property
    def isolated(self) -> bool:
        """Every kept run was scored in a container."""
        return set(self.isolation) <= {ISOLATED}


@dataclass(frozen=True)
class Comparison:
    """Arm ``a`` against arm ``b`` on successful runs.

    ``min_p`` is the smallest p the exact test can give at these arm sizes, ``min_p_holm``
    the smallest Holm-adjusted p over the table's pairs; ``epochs_needed`` per arm sizes the
    same test (Holm factor included) for the observed ratio at the pooled spread.
    """

    a: str
    b: str
    ratio: float | None
    ratio_ci: Interval | None
    p_value: float | None
    p_holm: float | None
    min_p: float
    min_p_holm: float
    epochs_needed: int | None


@dataclass(frozen=True)
class Spread:
    """Pooled sd of log speedups of successful runs, its degrees of freedom and 95% interval."""

    sd: float
    dof: int
    interval: tuple[float, float] | None


def kept(runs: Any) -> tuple[Any, int]:
    """The rows that count (outcome ``scored``) and how many harness errors were left out."""
    if "outcome" not in runs:
        return runs, 0
    bad = runs["outcome"] == HARNESS_ERROR
    return runs[~bad], int(bad.sum())


def summarise_arm(arm: str, runs: Any) -> ArmSummary:
    """Summary of one arm's runs (a DataFrame slice of measured rows)."""
    runs, excluded = kept(runs)
    speeds = [float(v) if v == v else 0.0 for v in runs["speedup"].fillna(0.0)]
    ok = runs[runs["success"] == 1]
    cats = sorted(c for c in runs.columns if c.startswith("cat_"))
    return ArmSummary(
        arm=arm,
        runs=len(runs),
        excluded=excluded,
        successes=len(ok),
        success_ci=wilson(len(ok), len(runs)),
        geomean=geomean(speeds),
        geomean_ci=geomean_ci(speeds),
        fast_1_0=fast_p(speeds, 1.0),
        fast_1_1=fast_p(speeds, 1.1),
        coverage=float(runs["coverage"].mean()) if runs["coverage"].notna().any() else None,
        categories={c[4:]: geomean([float(v) for v in ok[c].dropna()]) for c in cats},
        speedups=successes(speeds),
        isolation=_isolation_counts(runs),
    )


def _isolation_counts(runs: Any) -> dict[str, int]:
    found = runs["isolation"] if "isolation" in runs else [None] * len(runs)
    counts: dict[str, int] = {}
    for value in found:
        key = str(value) if isinstance(value, str) and value else "unknown"
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


def publication_refusal(runs: Any) -> str | None:
    """Why ``runs`` may not be published (one line); None when every counted run was isolated.

    Every run that counts must have been scored in a container (``isolation`` ``container``). A
    run scored in the local sandbox (``isolation`` ``local``: the agent and the scorer shared
    a user and a host) or with no record of its isolation (``unknown``) is not tamper-proof.
    Harness errors are left out: they carry no score.
    """
    counts = _isolation_counts(kept(runs)[0])
    bad = {k: n for k, n in counts.items() if k != ISOLATED}
    if not bad:
        return None
    found = ", ".join(f"{n} {k}" for k, n in bad.items())
    return (
        f"refusing to publish: {sum(bad.values())} run(s) not scored in a container "
        f"(isolation: {found}), so their scores are not known to be tamper-proof; rerun "
        "them with -T sandbox=docker or k8s"
    )


def pairs(arms: list[ArmSummary]) -> int:
    """The number of pairwise comparisons among the arms (the Holm factor's m)."""
    return math.comb(len(arms), 2)


def spread(arms: list[ArmSummary]) -> Spread:
    """The pooled spread of log speedups over the arms, with its own 95% interval."""
    sd, dof = pooled_sd_log([a.speedups for a in arms])
    return Spread(sd, dof, sd_interval(sd, dof))


def compare(arms: list[ArmSummary]) -> list[Comparison]:
    """Every pair of arms: ratio of geomeans (interval), permutation p, Holm-adjusted p."""
    m, sd = pairs(arms), spread(arms).sd
    found = [
        (a, b, ratio_ci(a.speedups, b.speedups), permutation_test(a.speedups, b.speedups))
        if a.speedups and b.speedups
        else (a, b, None, None)
        for a, b in itertools.combinations(arms, 2)
    ]
    adjusted = iter(holm([p for *_, p in found if p is not None]))
    floors = [min_p(len(a.speedups), len(b.speedups)) for a, b, *_ in found]
    return [
        Comparison(
            a=a.arm,
            b=b.arm,
            ratio=rc[0] if rc else None,
            ratio_ci=rc[1] if rc else None,
            p_value=p,
            p_holm=next(adjusted) if p is not None else None,
            min_p=floors[i],
            min_p_holm=holm_floor(floors, i),
            epochs_needed=epochs_needed(rc[0], sd, comparisons=m) if rc else None,
        )
        for i, (a, b, rc, p) in enumerate(found)
    ]


def study_epochs(arms: list[ArmSummary]) -> int | None:
    """Epochs per arm the study's 1.13x vs 0.5x gap needs at the observed spread (m pairs)."""
    sd = spread(arms).sd
    return epochs_needed(STUDY_RATIO, sd, comparisons=max(1, pairs(arms)))
