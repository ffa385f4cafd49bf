"""The statistics behind the metrics and the leaderboard (pure numpy, no Inspect)."""

import math

import numpy as np
import pytest

from evals.stats import (
    epochs_needed,
    fast_p,
    geomean,
    geomean_ci,
    holm,
    permutation_floor,
    permutation_test,
    pooled_sd_log,
    ratio_ci,
    successes,
    wilson,
)

RUNS = [0, 1.2, 1.5, 0.9, 2.0]  # the example: one failure, four successes


def test_success_rate_and_conditional_geomean_are_separate():
    assert successes(RUNS) == [1.2, 1.5, 0.9, 2.0]
    assert geomean(successes(RUNS)) == pytest.approx((1.2 * 1.5 * 0.9 * 2.0) ** 0.25)
    assert fast_p(RUNS, 1.0) == pytest.approx(3 / 5) and fast_p(RUNS, 1.1) == pytest.approx(3 / 5)
    assert fast_p([1.05, 1.2, 0], 1.1) == pytest.approx(1 / 3)
    assert geomean([0, 0]) is None and geomean_ci([0, 0]) is None


def test_wilson_interval_matches_the_formula_and_stays_inside_0_1():
    lo, hi = wilson(4, 5)
    assert lo == pytest.approx(0.3755, abs=1e-4) and hi == pytest.approx(0.9638, abs=1e-4)
    assert wilson(0, 5)[0] == 0 and 0 < wilson(0, 5)[1] < 0.5
    assert wilson(5, 5)[1] == 1 and wilson(5, 5)[0] > 0.5


def test_bca_interval_has_width_when_epochs_differ_and_covers_the_estimate():
    lo, hi = geomean_ci(RUNS)
    g = geomean(successes(RUNS))
    assert lo < g < hi and hi - lo > 0.1
    assert geomean_ci([1.3, 1.3, 1.3]) == pytest.approx((1.3, 1.3))


def test_bca_covers_better_than_nominal_failure_at_n5():
    # lognormal speedups: the 95% interval of the geomean should cover the true value in most
    # of 200 simulated studies of 5 epochs (a loose bound that a broken interval fails)
    rng = np.random.default_rng(1)
    truth, hits = 1.2, 0
    for _ in range(200):
        sample = list(np.exp(rng.normal(math.log(truth), 0.3, 5)))
        lo, hi = geomean_ci(sample, seed=int(rng.integers(1 << 30)))
        hits += lo <= truth <= hi
    assert hits >= 160


def test_permutation_test_detects_a_planted_difference_and_not_a_null_one():
    rng = np.random.default_rng(2)
    a = list(np.exp(rng.normal(math.log(1.5), 0.1, 8)))
    b = list(np.exp(rng.normal(math.log(1.0), 0.1, 8)))
    null = list(np.exp(rng.normal(math.log(1.5), 0.1, 8)))
    assert permutation_test(a, b) < 0.01
    assert permutation_test(a, null) > 0.05
    # 3 runs against 3: the exact test cannot go below 2/20
    assert permutation_test([2, 2.1, 2.2], [1, 1.1, 1.2]) == pytest.approx(0.1)


def test_ratio_ci_holm_and_power():
    ratio, lo, hi = ratio_ci([2, 2.1, 2.2, 1.9], [1, 1.1, 1.2, 0.9])
    assert lo < ratio < hi and lo > 1.5
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert epochs_needed(1.0, 0.3) is None
    assert epochs_needed(1.1, 0.3) > epochs_needed(1.5, 0.3) >= 4
    assert permutation_floor(0.05) == 4 and permutation_floor(0.1) == 3
    assert math.isnan(pooled_sd_log([[1.0]]))
