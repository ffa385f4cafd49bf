"""Epochs per arm for the comparison the leaderboard makes: exact permutation test, then Holm.

Sized by simulation of that test, not by a z formula (which promised 0.8 where the permutation
test gave 0.59-0.76). Each comparison is taken at ``alpha / m`` for ``m`` pairs of arms (Holm's
first step, its hardest), so 4 runs per arm, which can reach 0.029 but never 0.05 / 3, are
never enough for three pairs. Logs are simulated normal; the test only sees the standardised
effect ``|log(ratio)| / sd``.
"""

from __future__ import annotations

import functools
import itertools
import math
import warnings

import numpy as np

from evals.stats.compare import EXACT_LIMIT, min_p

SIMULATIONS = 2000
POWER_SEED = 0
SAMPLED_SPLITS = 4000  # splits per data set above EXACT_LIMIT (a Monte Carlo p)
SIMULATE_UP_TO = 40  # runs per arm; above, the t-test size (the two tests agree there)
CELLS = 4_000_000  # data sets x splits held at once (memory ~ 32 MB)


def permutation_floor(alpha: float = 0.05) -> int:
    """The fewest runs per arm at which the exact two-sided permutation test can reach alpha."""
    n = 1
    while min_p(n, n) > alpha:
        n += 1
    return n


def _splits(n: int, rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    """Which of the 2n pooled runs go to arm a, one row per split; True when exhaustive."""
    exact = math.comb(2 * n, n) <= EXACT_LIMIT
    if exact:
        rows = [list(c) for c in itertools.combinations(range(2 * n), n)]
    else:
        rows = [list(rng.permutation(2 * n)[:n]) for _ in range(SAMPLED_SPLITS)]
    mask = np.zeros((len(rows), 2 * n))
    for i, r in enumerate(rows):
        mask[i, r] = 1.0
    return mask, exact


def permutation_power(
    *, effect: float, n: int, alpha: float, sims: int = SIMULATIONS, seed: int = POWER_SEED
) -> float:
    """Simulated power of the two-sided permutation test (|difference| rule) at ``alpha``.

    ``n`` runs per arm, logs normal with sd 1, means ``effect`` apart. Hand-written rather than
    scipy's ``permutation_test`` in a loop: every simulated data set shares one split matrix,
    so the p-values of a block of data sets are one matrix product (thousands per second).
    """
    rng = np.random.default_rng(seed)
    mask, exact = _splits(n, rng)
    hits = 0
    block = max(1, CELLS // len(mask))
    for start in range(0, sims, block):
        size = min(block, sims - start)
        data = np.concatenate(
            [rng.normal(effect, 1.0, (size, n)), rng.normal(0.0, 1.0, (size, n))], axis=1
        )
        total = data.sum(axis=1, keepdims=True)
        observed = np.abs(2 * data[:, :n].sum(axis=1) - total[:, 0]) / n
        sums = data @ mask.T
        gaps = np.abs(2 * sums - total) / n
        beyond = (gaps >= observed[:, None] * (1 - 1e-12)).sum(axis=1)
        p = beyond / len(mask) if exact else (beyond + 1) / (len(mask) + 1)
        hits += int(np.sum(p <= alpha))
    return hits / sims


def t_test_size(effect: float, *, alpha: float, power: float) -> int:
    """Runs per arm a two-sided two-sample t-test needs (statsmodels, noncentral t)."""
    from statsmodels.stats.power import TTestIndPower

    if effect >= 6:  # solve_power's root finder leaves its bracket; 2 runs then suffice
        return 2
    analysis = TTestIndPower()
    with warnings.catch_warnings():  # a root finder that fails returns NaN, handled below
        warnings.simplefilter("ignore")
        n = float(
            np.asarray(analysis.solve_power(effect_size=effect, alpha=alpha, power=power)).item()
        )
    if math.isfinite(n):
        return max(2, math.ceil(n))
    # no convergence (effects near 6 at alpha 0.05): the smallest size whose power is enough
    for runs in range(2, SIMULATE_UP_TO + 1):
        if analysis.power(effect_size=effect, nobs1=runs, alpha=alpha) >= power:
            return runs
    return SIMULATE_UP_TO


@functools.lru_cache(maxsize=512)
def _needed(effect: float, level: float, power: float, sims: int, seed: int) -> int:
    n = max(permutation_floor(level), t_test_size(effect, alpha=level, power=power))
    while n <= SIMULATE_UP_TO:
        if permutation_power(effect=effect, n=n, alpha=level, sims=sims, seed=seed) >= power:
            return n
        n += 1
    return n


def epochs_needed(
    ratio: float,
    sd_log: float,
    *,
    comparisons: int = 1,
    alpha: float = 0.05,
    power: float = 0.8,
    sims: int = SIMULATIONS,
    seed: int = POWER_SEED,
) -> int | None:
    """Epochs per arm (equal arms) to detect a geomean ratio at a log-speedup spread.

    The smallest n at which the simulated power of the exact permutation test at
    ``alpha / comparisons`` reaches ``power`` (from the t-test's size upwards, never below the
    test's floor); above :data:`SIMULATE_UP_TO` runs per arm the t-test's size. None when the
    ratio is 1 (no effect to detect) or the spread is unknown.
    """
    if ratio <= 0 or ratio == 1 or not math.isfinite(sd_log) or sd_log < 0 or comparisons < 1:
        return None
    level = alpha / comparisons
    if sd_log == 0:  # every run alike: any gap separates the arms once the test can say so
        return permutation_floor(level)
    effect = round(abs(math.log(ratio)) / sd_log, 6)
    return _needed(effect, level, power, sims, seed)
