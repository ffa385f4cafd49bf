"""Metrics across samples (epochs): geometric mean and a bootstrap confidence interval.

Use them keyed by value name on dict-valued scores, e.g.
``metrics={"speedup": [mean(), stderr(), ci_lower(), ci_upper(), geometric_mean()]}``.
"""

from __future__ import annotations

import math
import random

from inspect_ai.scorer import Metric, SampleScore, metric

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0


def _values(scores: list[SampleScore]) -> list[float]:
    return [s.score.as_float() for s in scores]


@metric
def geometric_mean() -> Metric:
    """Geometric mean; 0 when any sample scored 0 (a failed kernel counts fully)."""

    def compute(scores: list[SampleScore]) -> float:
        vals = _values(scores)
        if not vals or min(vals) <= 0:
            return 0.0
        return math.exp(sum(math.log(v) for v in vals) / len(vals))

    return compute


def _bootstrap_means(vals: list[float]) -> list[float]:
    rng = random.Random(BOOTSTRAP_SEED)
    n = len(vals)
    return sorted(sum(rng.choices(vals, k=n)) / n for _ in range(BOOTSTRAP_RESAMPLES))


def _percentile(sorted_vals: list[float], q: float) -> float:
    idx = min(len(sorted_vals) - 1, max(0, round(q * (len(sorted_vals) - 1))))
    return sorted_vals[idx]


@metric
def ci_lower(level: float = 0.95) -> Metric:
    """Lower end of the percentile-bootstrap confidence interval of the mean."""

    def compute(scores: list[SampleScore]) -> float:
        vals = _values(scores)
        return _percentile(_bootstrap_means(vals), (1 - level) / 2) if vals else 0.0

    return compute


@metric
def ci_upper(level: float = 0.95) -> Metric:
    """Upper end of the percentile-bootstrap confidence interval of the mean."""

    def compute(scores: list[SampleScore]) -> float:
        vals = _values(scores)
        return _percentile(_bootstrap_means(vals), (1 + level) / 2) if vals else 0.0

    return compute
