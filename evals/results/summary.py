"""Per-arm summaries and pairwise comparisons computed from the dataset's measured rows."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

from evals.stats import (
    epochs_needed,
    fast_p,
    geomean,
    geomean_ci,
    holm,
    permutation_test,
    pooled_sd_log,
    ratio_ci,
    successes,
    wilson,
)

STUDY_RATIO = 1.13 / 0.5  # the KERNELSEEK study's reported gap (n = 1 each)


@dataclass(frozen=True)
class ArmSummary:
    """One arm on one task and model: success and speed, reported separately."""

    arm: str
    runs: int
    successes: int
    success_ci: tuple[float, float]
    geomean: float | None
    geomean_ci: tuple[float, float] | None
    fast_1_0: float
    fast_1_1: float
    coverage: float | None
    categories: dict[str, float | None]
    speedups: list[float]


@dataclass(frozen=True)
class Comparison:
    """Arm ``a`` against arm ``b`` on successful runs."""

    a: str
    b: str
    ratio: float | None
    ratio_ci: tuple[float, float] | None
    p_value: float | None
    p_holm: float | None
    epochs_needed: int | None


def summarise_arm(arm: str, runs: Any) -> ArmSummary:
    """Summary of one arm's runs (a DataFrame slice of measured rows)."""
    speeds = [float(v) if v == v else 0.0 for v in runs["speedup"].fillna(0.0)]
    ok = runs[runs["success"] == 1]
    cats = sorted(c for c in runs.columns if c.startswith("cat_"))
    return ArmSummary(
        arm=arm,
        runs=len(runs),
        successes=len(ok),
        success_ci=wilson(len(ok), len(runs)),
        geomean=geomean(speeds),
        geomean_ci=geomean_ci(speeds),
        fast_1_0=fast_p(speeds, 1.0),
        fast_1_1=fast_p(speeds, 1.1),
        coverage=float(runs["coverage"].mean()) if runs["coverage"].notna().any() else None,
        categories={c[4:]: geomean([float(v) for v in ok[c].dropna()]) for c in cats},
        speedups=successes(speeds),
    )


def compare(arms: list[ArmSummary]) -> list[Comparison]:
    """Every pair of arms: ratio of geomeans (BCa CI), permutation p, Holm-adjusted p."""
    pairs = list(itertools.combinations(arms, 2))
    sd = pooled_sd_log([a.speedups for a in arms])
    raw: list[tuple[ArmSummary, ArmSummary, Any, float | None]] = []
    for a, b in pairs:
        if a.speedups and b.speedups:
            raw.append(
                (a, b, ratio_ci(a.speedups, b.speedups), permutation_test(a.speedups, b.speedups))
            )
        else:
            raw.append((a, b, None, None))
    tested = [p for *_, p in raw if p is not None]
    adjusted = iter(holm(tested))
    out = []
    for a, b, rc, p in raw:
        out.append(
            Comparison(
                a=a.arm,
                b=b.arm,
                ratio=rc[0] if rc else None,
                ratio_ci=(rc[1], rc[2]) if rc else None,
                p_value=p,
                p_holm=next(adjusted) if p is not None else None,
                epochs_needed=epochs_needed(rc[0], sd) if rc else None,
            )
        )
    return out


def study_epochs(arms: list[ArmSummary]) -> tuple[float, int | None]:
    """The observed pooled log-speedup spread and the epochs the study's 1.13x/0.5x gap needs."""
    sd = pooled_sd_log([a.speedups for a in arms])
    return sd, epochs_needed(STUDY_RATIO, sd) if math.isfinite(sd) else None
