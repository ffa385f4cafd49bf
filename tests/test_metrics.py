"""The unreduced metrics agree with evals.stats on every epoch's score; short display names."""

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.scorer import SampleScore, Score, scorer
from inspect_ai.solver import solver

from evals.bench.scoring.metrics import (
    ci_high,
    ci_low,
    fast_1_0,
    fast_1_1,
    geomean_ok,
    rate,
    runs,
    wilson_high,
    wilson_low,
)
from evals.stats import geomean, geomean_ci, wilson

SPEEDUPS = [0.0, 1.2, 1.5, 0.9, 1.1]  # one failed run (0) and four successes


def _scores(values):
    return [SampleScore(score=Score(value=v), sample_id="s") for v in values]


def test_interval_ends_match_the_statistics():
    scores = _scores(SPEEDUPS)
    assert (wilson_low()(scores), wilson_high()(scores)) == wilson(4, 5)
    assert (ci_low()(scores), ci_high()(scores)) == geomean_ci(SPEEDUPS).bounds
    assert geomean_ok()(scores) == geomean(SPEEDUPS)
    assert rate()(_scores([1, 0, 1, 1])) == 0.75 and runs()(scores) == 5


def test_no_interval_reports_zero():
    for values in ([0.0, 0.0], [0.0, 1.3], [1.3, 1.3]):
        scores = _scores(values)
        assert ci_low()(scores) == ci_high()(scores) == 0.0


@solver
def _noop():
    async def solve(state, generate):
        return state

    return solve


@scorer(
    metrics={
        "success": [rate(), wilson_low(), wilson_high(), runs()],
        "speedup": [geomean_ok(), ci_low(), ci_high(), fast_1_0(), fast_1_1()],
    }
)
def _fixed():
    async def score(state, target):
        return Score(value={"success": 1.0, "speedup": 1.0 + 0.1 * state.epoch})

    return score


def test_names_survive_inspects_results_table(tmp_path):
    # Inspect's results table cuts a name past about 13 characters ("evals/" included) at 80
    # columns: "evals/wilson_low" and "evals/wilson_high" both showed as "evals/wilso..."
    [log] = eval(
        Task(dataset=[Sample(input="x")], solver=_noop(), scorer=_fixed()),
        model="mockllm/model",
        epochs=3,
        display="none",
        log_dir=str(tmp_path),
    )
    names = {s.name: list(s.metrics) for s in log.results.scores}
    assert names == {
        "success": ["rate", "rate_lo", "rate_hi", "runs"],
        "speedup": ["gmean", "gm_lo", "gm_hi", "fast1.0", "fast1.1"],
    }
    assert all(len(f"evals/{n}") <= 13 for ns in names.values() for n in ns)
