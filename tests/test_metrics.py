"""The unreduced metrics agree with evals.stats on every epoch's score."""

from inspect_ai.scorer import SampleScore, Score

from evals.bench.metrics import ci_high, ci_low, geomean_ok, rate, runs, wilson_high, wilson_low
from evals.stats import geomean, geomean_ci, wilson

SPEEDUPS = [0.0, 1.2, 1.5, 0.9, 1.1]  # one failed run (0) and four successes


def _scores(values):
    return [SampleScore(score=Score(value=v), sample_id="s") for v in values]


def test_interval_ends_match_the_statistics():
    scores = _scores(SPEEDUPS)
    assert (wilson_low()(scores), wilson_high()(scores)) == wilson(4, 5)
    assert (ci_low()(scores), ci_high()(scores)) == geomean_ci(SPEEDUPS)
    assert geomean_ok()(scores) == geomean(SPEEDUPS)
    assert rate()(_scores([1, 0, 1, 1])) == 0.75 and runs()(scores) == 5


def test_no_success_reports_zero():
    scores = _scores([0.0, 0.0])
    assert ci_low()(scores) == ci_high()(scores) == geomean_ok()(scores) == 0.0
