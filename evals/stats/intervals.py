"""Point estimates and confidence intervals for per-run results (one value per epoch).

- success rate: a Wilson score interval (binomial; sensible at n = 5 and at 0 or n successes);
- geomean speedup over the successful runs: a BCa bootstrap interval (bias-corrected and
  accelerated; a plain percentile bootstrap under-covers at n = 5);
- fast_p: KernelBench's share of runs that are correct *and* faster than ``p`` times upstream.

Speedups are ratios (upstream time over candidate time); a failed run is 0 or None.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from statistics import NormalDist

import numpy as np

BOOTSTRAP_RESAMPLES = 4000
BOOTSTRAP_SEED = 0
Statistic = Callable[[Sequence[np.ndarray]], float]


def geomean(values: Sequence[float]) -> float | None:
    """Geometric mean of positive values; None when there are none."""
    vals = [v for v in values if v is not None and v > 0]
    if not vals:
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def successes(speedups: Sequence[float | None]) -> list[float]:
    """The speedups of the successful runs (a failed run is 0 or None)."""
    return [float(v) for v in speedups if v is not None and v > 0]


def wilson(k: int, n: int, *, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a success rate ``k / n``; (0, 1) when ``n`` is 0."""
    if n <= 0:
        return 0.0, 1.0
    z = NormalDist().inv_cdf(0.5 + level / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    lo = 0.0 if k == 0 else max(0.0, centre - half)
    return lo, 1.0 if k == n else min(1.0, centre + half)


def fast_p(speedups: Sequence[float | None], p: float) -> float:
    """Share of runs that succeeded with a speedup above ``p`` (failed runs count as slow)."""
    if not speedups:
        return 0.0
    return sum(1 for v in speedups if v is not None and v > p) / len(speedups)


def mean_log(groups: Sequence[np.ndarray]) -> float:
    """Statistic: mean of the first group's log values (log of its geomean)."""
    return float(np.mean(groups[0]))


def log_ratio(groups: Sequence[np.ndarray]) -> float:
    """Statistic: log of the ratio of two groups' geomeans (inputs are logs)."""
    return float(np.mean(groups[0]) - np.mean(groups[1]))


def bca_interval(
    groups: Sequence[Sequence[float]],
    statistic: Statistic,
    *,
    level: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float]:
    """BCa bootstrap interval of ``statistic`` over independent groups (each resampled alone).

    The acceleration comes from the jackknife, leaving out one observation of one group at a
    time (Efron and Tibshirani 1993, ch. 14). Degenerate cases (every resample equal, a group
    of one) return the point estimate at both ends.
    """
    data = [np.asarray(g, dtype=float) for g in groups]
    theta = statistic(data)
    if any(len(g) < 2 for g in data):
        return theta, theta
    rng = np.random.default_rng(seed)
    boot = np.empty(resamples)
    for i in range(resamples):
        boot[i] = statistic([g[rng.integers(0, len(g), len(g))] for g in data])
    if np.ptp(boot) == 0:
        return theta, theta
    norm = NormalDist()
    below = float(np.mean(boot < theta)) + 0.5 * float(np.mean(boot == theta))
    z0 = norm.inv_cdf(min(max(below, 1 / resamples), 1 - 1 / resamples))
    jack = np.array(
        [
            statistic([np.delete(g, j) if gi == k else g for k, g in enumerate(data)])
            for gi, g0 in enumerate(data)
            for j in range(len(g0))
        ]
    )
    d = jack.mean() - jack
    denom = 6 * float(np.sum(d * d)) ** 1.5
    acc = float(np.sum(d**3)) / denom if denom > 0 else 0.0
    ends = []
    for q in ((1 - level) / 2, (1 + level) / 2):
        z = norm.inv_cdf(q)
        adj = norm.cdf(z0 + (z0 + z) / (1 - acc * (z0 + z)))
        ends.append(float(np.quantile(boot, min(max(adj, 0.0), 1.0))))
    return ends[0], ends[1]


def geomean_ci(
    speedups: Sequence[float | None], *, level: float = 0.95, seed: int = BOOTSTRAP_SEED
) -> tuple[float, float] | None:
    """BCa interval of the geomean speedup over the successful runs; None if none succeeded."""
    logs = [math.log(v) for v in successes(speedups)]
    if not logs:
        return None
    lo, hi = bca_interval([logs], mean_log, level=level, seed=seed)
    return math.exp(lo), math.exp(hi)
