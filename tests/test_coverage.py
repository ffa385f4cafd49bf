"""Do the 95% intervals hold 95% at the sizes this benchmark runs (3-10 runs per arm), and do
the epochs the power table asks for reach power 0.8 with the test actually run?

Seeded simulations, a few hundred replicates each: deterministic, a few seconds."""

import math

import numpy as np
import pytest

from evals.stats import bootstrap_interval, epochs_needed, geomean_ci, permutation_test, ratio_ci

REPLICATES = 400
SD = 0.3  # spread of log speedups
TRUTH = 1.5  # true geomean speedup


def _draw(rng, n):
    return np.exp(rng.normal(math.log(TRUTH), SD, n))


def _one_arm_coverage(n, interval, seed):
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(REPLICATES):
        lo, hi = interval(_draw(rng, n))
        hits += lo <= TRUTH <= hi
    return hits / REPLICATES


def _ratio_coverage(n, interval, seed):
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(REPLICATES):  # both arms at the same truth: the true ratio is 1
        lo, hi = interval(_draw(rng, n), _draw(rng, n))
        hits += lo <= 1.0 <= hi
    return hits / REPLICATES


def _bca_one(x):
    lo, hi = bootstrap_interval([np.log(x)])
    return math.exp(lo), math.exp(hi)


def _bca_ratio(a, b):
    lo, hi = bootstrap_interval([np.log(a), np.log(b)])
    return math.exp(lo), math.exp(hi)


def test_a_bca_bootstrap_under_covers_at_3_runs():
    assert _one_arm_coverage(3, _bca_one, seed=1) < 0.85
    assert _ratio_coverage(3, _bca_ratio, seed=2) < 0.90


@pytest.mark.parametrize("n", [3, 5, 10])
def test_geomean_and_ratio_intervals_cover_at_small_n(n):
    one = _one_arm_coverage(n, lambda x: geomean_ci(list(x)).bounds, seed=10 + n)
    two = _ratio_coverage(n, lambda a, b: ratio_ci(list(a), list(b))[1].bounds, seed=20 + n)
    assert one >= 0.92 and two >= 0.92, (one, two)


def _power(n, effect, alpha, seed, reps=REPLICATES):
    """Share of simulated studies (n runs per arm) that scipy's permutation test rejects."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(reps):
        a = np.exp(rng.normal(effect * SD, SD, n))
        b = np.exp(rng.normal(0.0, SD, n))
        hits += permutation_test(list(a), list(b)) <= alpha
    return hits / reps


@pytest.mark.parametrize(("effect", "pairs"), [(2.23, 1), (1.91, 1), (2.70, 3)])
def test_epochs_needed_reach_the_power_they_promise(effect, pairs):
    # the z formula asked for 4 runs per arm at effect 2.23 (power 0.59), and 4 with 3 pairs,
    # where the smallest Holm-adjusted p is 0.086 (power 0)
    n = epochs_needed(math.exp(effect * SD), SD, comparisons=pairs)
    alpha = 0.05 / pairs
    assert _power(n, effect, alpha, seed=n) >= 0.75
    assert _power(n - 1, effect, alpha, seed=n + 1) < 0.85  # and not grossly more than needed
