"""Comparing arms: ratio of geomeans, permutation test, Holm's correction, epochs needed.

All comparisons are on log speedups of successful runs (the geomean is the mean of logs).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

from evals.stats.intervals import BOOTSTRAP_SEED, bca_interval, log_ratio

PERMUTATIONS = 10000
EXACT_LIMIT = 20000  # enumerate every split when there are at most this many


def ratio_ci(
    a: Sequence[float], b: Sequence[float], *, level: float = 0.95, seed: int = BOOTSTRAP_SEED
) -> tuple[float, float, float]:
    """Ratio of geomeans ``a / b`` (positive speedups) and its BCa interval: (ratio, lo, hi)."""
    la, lb = [math.log(v) for v in a], [math.log(v) for v in b]
    ratio = math.exp(float(np.mean(la) - np.mean(lb)))
    lo, hi = bca_interval([la, lb], log_ratio, level=level, seed=seed)
    return ratio, math.exp(lo), math.exp(hi)


def permutation_test(
    a: Sequence[float],
    b: Sequence[float],
    *,
    resamples: int = PERMUTATIONS,
    seed: int = BOOTSTRAP_SEED,
) -> float:
    """Two-sided permutation p-value for a difference in geomean between ``a`` and ``b``.

    Exact (every split of the pooled runs) when there are at most :data:`EXACT_LIMIT` splits,
    otherwise Monte Carlo with the observed split counted (p is never 0).
    """
    la, lb = np.log(np.asarray(a, float)), np.log(np.asarray(b, float))
    pooled, n = np.concatenate([la, lb]), len(la)
    if n == 0 or len(lb) == 0:
        return 1.0
    observed = float(abs(la.mean() - lb.mean()))
    total = pooled.sum()
    tol = 1e-12 * max(1.0, abs(observed))

    def diff(sum_a: float) -> float:
        return float(abs(sum_a / n - (total - sum_a) / len(lb)))

    if math.comb(len(pooled), n) <= EXACT_LIMIT:
        splits = [
            diff(float(pooled[list(c)].sum()))
            for c in itertools.combinations(range(len(pooled)), n)
        ]
        return sum(1 for d in splits if d >= observed - tol) / len(splits)
    rng = np.random.default_rng(seed)
    hits = sum(
        1
        for _ in range(resamples)
        if diff(float(rng.permutation(pooled)[:n].sum())) >= observed - tol
    )
    return (hits + 1) / (resamples + 1)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (same order as given)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def epochs_needed(
    ratio: float, sd_log: float, *, alpha: float = 0.05, power: float = 0.8
) -> int | None:
    """Epochs per arm to detect a geomean ratio at a log-speedup spread.

    ``n = 2 (z_{1-alpha/2} + z_power)^2 sd^2 / log(ratio)^2`` (two-sided z test), and at least
    what the exact permutation test needs to reach ``alpha`` at all (4 per arm at 0.05: with 3
    against 3 its smallest two-sided p is 0.1). None when the ratio is 1 (no effect to detect)
    or the spread is unknown.
    """
    if ratio <= 0 or ratio == 1 or not math.isfinite(sd_log) or sd_log < 0:
        return None
    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
    return max(permutation_floor(alpha), math.ceil(2 * (z * sd_log / math.log(ratio)) ** 2))


def permutation_floor(alpha: float = 0.05) -> int:
    """The fewest runs per arm at which the exact two-sided permutation test can reach alpha."""
    n = 1
    while 2 / math.comb(2 * n, n) > alpha:
        n += 1
    return n


def pooled_sd_log(groups: Sequence[Sequence[float]]) -> float:
    """Pooled standard deviation of log speedups (groups of two runs or more; nan if none)."""
    num, dof = 0.0, 0
    for g in groups:
        if len(g) >= 2:
            logs = np.log(np.asarray(g, float))
            num += float(np.sum((logs - logs.mean()) ** 2))
            dof += len(g) - 1
    return math.sqrt(num / dof) if dof else math.nan
