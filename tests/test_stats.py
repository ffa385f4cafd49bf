"""The statistics behind the metrics and the leaderboard (numpy, scipy, statsmodels)."""

import math

import pytest

from evals.stats import (
    epochs_needed,
    fast_p,
    geomean,
    geomean_ci,
    holm,
    holm_floor,
    min_p,
    permutation_floor,
    permutation_test,
    pooled_sd_log,
    ratio_ci,
    sd_interval,
    successes,
    wilson,
)

RUNS = [0, 1.2, 1.5, 0.9, 2.0]  # the example: one failure, four successes


def test_success_rate_and_conditional_geomean_are_separate():
    assert successes(RUNS) == [1.2, 1.5, 0.9, 2.0]
    assert geomean(successes(RUNS)) == pytest.approx((1.2 * 1.5 * 0.9 * 2.0) ** 0.25)
    assert fast_p(RUNS, 1.0) == pytest.approx(3 / 5) and fast_p(RUNS, 1.1) == pytest.approx(3 / 5)
    assert fast_p([1.05, 1.2, 0], 1.1) == pytest.approx(1 / 3)
    assert fast_p([1.1, 1.1], 1.1) == 0  # strictly greater
    assert geomean([0, 0]) is None


def test_wilson_interval_matches_the_formula_and_stays_inside_0_1():
    lo, hi = wilson(4, 5)
    assert lo == pytest.approx(0.3755, abs=1e-4) and hi == pytest.approx(0.9638, abs=1e-4)
    assert wilson(0, 5)[0] == 0 and 0 < wilson(0, 5)[1] < 0.5
    assert wilson(5, 5)[1] == 1 and wilson(5, 5)[0] > 0.5
    assert wilson(0, 0) == (0.0, 1.0)


def test_geomean_interval_is_a_t_interval_on_logs_or_a_dash_with_the_reason():
    # the committed leaderboard's two runs: the t interval, not the sample range
    ci = geomean_ci([0.9770, 0.9905])
    assert ci.method == "t" and ci.bounds[0] < 0.95 and ci.bounds[1] > 1.03
    lo, hi = geomean_ci(RUNS).bounds
    assert lo < geomean(successes(RUNS)) < hi
    for few in ([1.3], [0, 0], []):
        assert geomean_ci(few).bounds is None and "fewer than 2" in geomean_ci(few).reason
    assert geomean_ci([1.3, 1.3, 1.3]).bounds is None
    assert "same speedup" in geomean_ci([1.3, 1.3, 1.3]).reason
    assert geomean_ci([math.exp(0.1 * i) for i in range(60)]).method == "BCa bootstrap"


def test_permutation_test_rule_and_its_floors():
    assert permutation_test([2, 2.1, 2.2], [1, 1.1, 1.2]) == pytest.approx(0.1)  # 2 / 20
    # unequal arms, complete separation: the |difference| rule gives 1/56 (scipy's default
    # doubled one-sided p would be 2/56)
    assert permutation_test([5, 6, 7, 8, 9], [1, 2, 3]) == pytest.approx(1 / 56)
    assert min_p(5, 3) == pytest.approx(1 / 56) and min_p(3, 3) == pytest.approx(0.1)
    assert permutation_test([1.0, 1.1], [1.0, 1.1]) == 1.0
    # one run in an arm (a study of one epoch): enumerated, as min_p says, never an error
    assert permutation_test([2.0], [1.0]) == 1.0
    assert permutation_test([9.0], [1, 2, 3]) == pytest.approx(min_p(1, 3)) == pytest.approx(0.25)
    assert permutation_floor(0.05) == 4 and permutation_floor(0.1) == 3
    assert permutation_floor(0.05 / 3) == 5  # 4 per arm: 3 x 2/70 = 0.086 > 0.05


def test_ratio_ci_holm_spread_and_power():
    ratio, ci = ratio_ci([2, 2.1, 2.2, 1.9], [1, 1.1, 1.2, 0.9])
    assert ci.method == "Welch t" and ci.bounds[0] < ratio < ci.bounds[1] and ci.bounds[0] > 1.5
    assert ratio_ci([2.0], [1.0, 1.1])[1].bounds is None
    assert ratio_ci([2.0, 2.0], [1.0, 1.0])[1].bounds is None
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm_floor([2 / 70] * 3, 0) == pytest.approx(6 / 70)
    sd, dof = pooled_sd_log([[1.0, 1.2], [2.0, 2.5, 2.2]])
    assert dof == 3 and sd > 0 and math.isnan(pooled_sd_log([[1.0]])[0])
    lo, hi = sd_interval(0.3, 2)
    assert lo < 0.3 < hi and hi > 1.5  # two degrees of freedom say little about the spread
    assert epochs_needed(1.0, 0.3) is None
    assert epochs_needed(1.1, 0.3) > epochs_needed(1.5, 0.3) >= 4
    assert epochs_needed(3.0, 0.01, comparisons=3) == 5


def test_t_test_size_where_statsmodels_root_finder_fails():
    # solve_power returns NaN for effects near 6 at alpha 0.05 (its bracket ends at 10 runs);
    # a results build then died on int(NaN): the smallest size with enough power instead
    from statsmodels.stats.power import TTestIndPower

    from evals.stats.power import t_test_size

    for effect in (5.7, 5.8, 5.95):
        runs = t_test_size(effect, alpha=0.05, power=0.8)
        assert runs >= 2
        assert TTestIndPower().power(effect_size=effect, nobs1=runs, alpha=0.05) >= 0.8
    assert t_test_size(5.6, alpha=0.05, power=0.8) >= t_test_size(5.8, alpha=0.05, power=0.8)
