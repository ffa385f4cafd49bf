"""Point estimates and confidence intervals for per-run results (one value per epoch).

- success rate: a Wilson score interval (statsmodels; sensible at n = 5 and at 0 or n
  successes);
- geomean speedup over the successful runs: a Student t interval on the log speedups from 2
  runs up, a BCa bootstrap (scipy) from :data:`BOOTSTRAP_MIN_RUNS` runs up; no interval (and the
  reason) below 2 runs or when every run has the same speedup. Simulated coverage of a nominal
  95% interval (logs normal, sd 0.3): BCa 0.73 at n = 3, 0.84 at 5, 0.89 at 10; the t interval
  about 0.95 at each (``tests/test_coverage.py``);
- fast_p: KernelBench's share of runs that are correct *and* faster than ``p`` times upstream.

Speedups are ratios (upstream time over candidate time); a failed run is 0 or None.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# Below this a BCa bootstrap under-covers and the t interval is used. Simulated coverage of a
# nominal 95% (400 replicates; normal logs / gamma-skewed logs): BCa 0.71/0.73 at n = 3,
# 0.89/0.92 at 10, 0.94/0.91 at 20, 0.94/0.94 at 30, 0.95/0.93 at 50; t 0.94/0.93 at 3 and
# 0.95/0.93-0.95 from 10 to 50.
BOOTSTRAP_MIN_RUNS = 50
BOOTSTRAP_RESAMPLES = 4000
BOOTSTRAP_SEED = 0
LEVEL = 0.95
FEW_RUNS = "fewer than 2 successful runs"
NO_SPREAD = "every run has the same speedup (no spread to estimate)"


@dataclass(frozen=True)
class Interval:
    """A confidence interval of a speedup or a ratio (same units), or why there is none.

    ``bounds`` is (low, high), None when no interval can be given; ``method`` names how it was
    computed (``t``, ``Welch t``, ``BCa bootstrap``); ``reason`` says why there is none.
    """

    bounds: tuple[float, float] | None
    method: str = ""
    reason: str = ""

    @classmethod
    def missing(cls, reason: str) -> Interval:
        """No interval, for the reason given (a short phrase)."""
        return cls(bounds=None, reason=reason)


def geomean(values: Sequence[float | None]) -> float | None:
    """Geometric mean of positive values; None when there are none."""
    vals = [v for v in values if v is not None and v > 0]
    if not vals:
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def successes(speedups: Sequence[float | None]) -> list[float]:
    """The speedups of the successful runs (a failed run is 0 or None)."""
    return [float(v) for v in speedups if v is not None and v > 0]


def wilson(k: int, n: int, *, level: float = LEVEL) -> tuple[float, float]:
    """Wilson score interval of a success rate ``k / n`` (statsmodels); (0, 1) when n is 0."""
    if n <= 0:
        return 0.0, 1.0
    from statsmodels.stats.proportion import proportion_confint

    lo, hi = proportion_confint(k, n, alpha=1 - level, method="wilson")
    # the closed form leaves rounding dust at 0 and n successes; the exact ends are 0 and 1
    return (0.0 if k == 0 else float(lo)), (1.0 if k == n else float(hi))


def fast_p(speedups: Sequence[float | None], p: float) -> float:
    """Share of runs that succeeded with a speedup strictly above ``p`` (failures count slow)."""
    if not speedups:
        return 0.0
    return sum(1 for v in speedups if v is not None and v > p) / len(speedups)


def constant(logs: np.ndarray) -> bool:
    """True when every value is the same (up to rounding): no spread to estimate."""
    return bool(np.ptp(logs) <= 1e-12 * max(1.0, float(np.max(np.abs(logs)))))


def bootstrap_interval(
    samples: Sequence[np.ndarray], *, level: float = LEVEL, seed: int = BOOTSTRAP_SEED
) -> tuple[float, float]:
    """BCa bootstrap interval (scipy) of the mean of one sample, or of the difference of two.

    Inputs are logs; each sample is resampled alone. Covers its level only with many runs per
    sample (see :data:`BOOTSTRAP_MIN_RUNS`).
    """
    from scipy.stats import bootstrap

    def statistic(*groups: np.ndarray, axis: int = -1) -> np.ndarray:
        means = [np.asarray(np.mean(g, axis=axis)) for g in groups]
        return means[0] if len(means) == 1 else means[0] - means[1]

    res = bootstrap(
        tuple(samples),
        statistic,
        vectorized=True,
        confidence_level=level,
        n_resamples=BOOTSTRAP_RESAMPLES,
        method="BCa",
        rng=np.random.default_rng(seed),
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def log_interval(
    logs: Sequence[float], *, level: float = LEVEL, seed: int = BOOTSTRAP_SEED
) -> Interval:
    """Interval of the mean of ``logs`` (log scale): t from 2 values, BCa from many."""
    x = np.asarray(logs, dtype=float)
    if len(x) < 2:
        return Interval.missing(FEW_RUNS)
    if constant(x):
        return Interval.missing(NO_SPREAD)
    if len(x) >= BOOTSTRAP_MIN_RUNS:
        return Interval(bootstrap_interval([x], level=level, seed=seed), "BCa bootstrap")
    from scipy.stats import ttest_1samp

    ci = ttest_1samp(x, 0.0).confidence_interval(confidence_level=level)
    return Interval((float(ci.low), float(ci.high)), "t")


def geomean_ci(
    speedups: Sequence[float | None], *, level: float = LEVEL, seed: int = BOOTSTRAP_SEED
) -> Interval:
    """Interval of the geomean speedup over the successful runs (see :func:`log_interval`)."""
    logs = [math.log(v) for v in successes(speedups)]
    found = log_interval(logs, level=level, seed=seed)
    if found.bounds is None:
        return found
    lo, hi = found.bounds
    return Interval((math.exp(lo), math.exp(hi)), found.method)
