"""Comparing arms: ratio of geomeans, permutation test, Holm's correction, the spread.

All comparisons are on log speedups of successful runs (the geomean is the mean of logs).

The permutation rule (two-sided): p is the share of the splits of the pooled runs into groups
of the arms' sizes whose absolute difference of mean logs is at least the observed one. With
equal arms this is scipy's two-sided p; with unequal arms it is the |difference| rule, which
can be half scipy's default (twice the smaller one-sided p): 5 runs against 3 reach 1/56 =
0.018 here and 0.036 there.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from evals.stats.intervals import (
    BOOTSTRAP_MIN_RUNS,
    BOOTSTRAP_SEED,
    FEW_RUNS,
    LEVEL,
    NO_SPREAD,
    Interval,
    bootstrap_interval,
    constant,
)

PERMUTATIONS = 10000
EXACT_LIMIT = 20000  # enumerate every split when there are at most this many


def ratio_ci(
    a: Sequence[float], b: Sequence[float], *, level: float = LEVEL, seed: int = BOOTSTRAP_SEED
) -> tuple[float, Interval]:
    """Ratio of geomeans ``a / b`` (positive speedups) and its interval.

    Welch's t on the difference of mean logs (unequal spreads allowed); a two-sample BCa
    bootstrap when both arms have :data:`BOOTSTRAP_MIN_RUNS` runs; none below 2 runs in an arm
    or when neither arm has any spread.
    """
    la, lb = np.log(np.asarray(a, float)), np.log(np.asarray(b, float))
    ratio = math.exp(float(la.mean() - lb.mean()))
    if min(len(la), len(lb)) < 2:
        return ratio, Interval.missing(FEW_RUNS + " in an arm")
    if constant(la) and constant(lb):
        return ratio, Interval.missing(NO_SPREAD)
    if min(len(la), len(lb)) >= BOOTSTRAP_MIN_RUNS:
        lo, hi = bootstrap_interval([la, lb], level=level, seed=seed)
        return ratio, Interval((math.exp(lo), math.exp(hi)), "BCa bootstrap")
    from scipy.stats import ttest_ind

    ci = ttest_ind(la, lb, equal_var=False).confidence_interval(confidence_level=level)
    return ratio, Interval((math.exp(float(ci.low)), math.exp(float(ci.high))), "Welch t")


def permutation_test(
    a: Sequence[float],
    b: Sequence[float],
    *,
    resamples: int = PERMUTATIONS,
    seed: int = BOOTSTRAP_SEED,
) -> float:
    """Two-sided permutation p-value for a difference in geomean (the module's rule), scipy.

    Exact (every split of the pooled runs) when there are at most :data:`EXACT_LIMIT` splits,
    otherwise Monte Carlo with the observed split counted (p is never 0).
    """
    from scipy.stats import permutation_test as scipy_permutation_test

    la, lb = np.log(np.asarray(a, float)), np.log(np.asarray(b, float))
    if len(la) == 0 or len(lb) == 0:
        return 1.0
    if min(len(la), len(lb)) < 2:  # scipy wants two runs an arm: enumerate the few splits
        return _exact_p(la, lb)

    def gap(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.asarray(np.abs(np.mean(x, axis=axis) - np.mean(y, axis=axis)))

    exact = math.comb(len(la) + len(lb), len(la)) <= EXACT_LIMIT
    res = scipy_permutation_test(
        (la, lb),
        gap,
        permutation_type="independent",
        vectorized=True,
        n_resamples=np.inf if exact else resamples,
        alternative="greater",  # |difference| >= observed: the two-sided rule above
        rng=np.random.default_rng(seed),
    )
    return float(res.pvalue)


def _exact_p(la: np.ndarray, lb: np.ndarray) -> float:
    """The exact permutation p of the module's rule, by enumerating every split (small arms)."""
    pooled, n_a = np.concatenate([la, lb]), len(la)
    observed = abs(float(la.mean() - lb.mean()))
    gaps = []
    for chosen in itertools.combinations(range(len(pooled)), n_a):
        mask = np.zeros(len(pooled), bool)
        mask[list(chosen)] = True
        gaps.append(abs(float(pooled[mask].mean() - pooled[~mask].mean())))
    # a relative tolerance, as scipy's, so that ties in floating point count as ties
    return float(np.mean(np.asarray(gaps) >= observed * (1 - 1e-12)))


def min_p(n_a: int, n_b: int, *, resamples: int = PERMUTATIONS) -> float:
    """The smallest p :func:`permutation_test` can give for arms of these sizes (no ties).

    Equal arms: the observed split and its mirror tie, 2 / C(n_a + n_b, n_a); unequal arms:
    1 / C(n_a + n_b, n_a); Monte Carlo: 1 / (resamples + 1).
    """
    if n_a == 0 or n_b == 0:
        return 1.0
    splits = math.comb(n_a + n_b, n_a)
    if splits > EXACT_LIMIT:
        return 1 / (resamples + 1)
    return min(1.0, (2 if n_a == n_b else 1) / splits)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, same order as given (statsmodels)."""
    if not pvalues:
        return []
    from statsmodels.stats.multitest import multipletests

    return [float(p) for p in multipletests(list(pvalues), method="holm")[1]]


def holm_floor(floors: Sequence[float], i: int) -> float:
    """The smallest Holm-adjusted p pair ``i`` can reach, given every pair's smallest raw p.

    Holm's first step multiplies the smallest p by the number of pairs ``m``, and every
    adjusted p is at least that and at least its own raw p: max(floors[i], m * min(floors)).
    """
    return min(1.0, max(floors[i], len(floors) * min(floors)))


def pooled_sd_log(groups: Sequence[Sequence[float]]) -> tuple[float, int]:
    """Pooled sd of log speedups and its degrees of freedom (groups of 2 runs or more).

    Hand-written: no library pools a within-group sd over groups of unequal sizes. (nan, 0)
    when no group has two runs.
    """
    num, dof = 0.0, 0
    for g in groups:
        if len(g) >= 2:
            logs = np.log(np.asarray(g, float))
            num += float(np.sum((logs - logs.mean()) ** 2))
            dof += len(g) - 1
    return (math.sqrt(num / dof), dof) if dof else (math.nan, 0)


def sd_interval(sd: float, dof: int, *, level: float = LEVEL) -> tuple[float, float] | None:
    """Chi-square interval of a standard deviation estimated with ``dof`` degrees of freedom."""
    if dof < 1 or not math.isfinite(sd):
        return None
    from scipy.stats import chi2

    tail = (1 - level) / 2
    return (
        sd * math.sqrt(dof / float(chi2.ppf(1 - tail, dof))),
        sd * math.sqrt(dof / float(chi2.ppf(tail, dof))),
    )
