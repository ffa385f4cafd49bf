"""Metrics over every epoch's score (``scores="unreduced"``: each epoch is one draw).

Inspect reduces epochs to one score per sample before ordinary metrics run, and a task has one
sample, so reduced metrics would see a single number (zero-width intervals). These metrics see
one score per sample per epoch. Keyed by value name on the scorer's dict-valued scores:

- on ``success`` (1 when every scenario is correct): ``mean`` is the success rate, with its
  Wilson interval ``wilson_low`` / ``wilson_high``;
- on ``speedup`` (geomean vs the upstream, 0 for a failed run): ``geomean_ok`` over the
  successful runs with its BCa bootstrap interval ``ci_low`` / ``ci_high``,
  and KernelBench's ``fast_1_0`` / ``fast_1_1`` (share of runs correct and faster than 1.0x /
  1.1x the upstream).

An undefined value (no successful run) is reported as 0.
"""

from __future__ import annotations

from inspect_ai.scorer import Metric, SampleScore, metric

from evals.stats import fast_p, geomean, geomean_ci, wilson


def _values(scores: list[SampleScore]) -> list[float]:
    return [s.score.as_float() for s in scores]


@metric(scores="unreduced")
def rate() -> Metric:
    """Mean over every epoch's score (for 0/1 values: the success rate)."""

    def compute(scores: list[SampleScore]) -> float:
        vals = _values(scores)
        return sum(vals) / len(vals) if vals else 0.0

    return compute


def _wilson_end(end: int, level: float) -> Metric:
    """One end (0 low, 1 high) of the Wilson interval of the success rate (values 0/1)."""

    def compute(scores: list[SampleScore]) -> float:
        vals = _values(scores)
        return wilson(sum(1 for v in vals if v > 0), len(vals), level=level)[end]

    return compute


@metric(scores="unreduced")
def wilson_low(level: float = 0.95) -> Metric:
    """Lower end of the Wilson interval of the success rate (values 0/1)."""
    return _wilson_end(0, level)


@metric(scores="unreduced")
def wilson_high(level: float = 0.95) -> Metric:
    """Upper end of the Wilson interval of the success rate (values 0/1)."""
    return _wilson_end(1, level)


@metric(scores="unreduced")
def geomean_ok() -> Metric:
    """Geometric mean of the speedups of the successful runs (0 if none succeeded)."""

    def compute(scores: list[SampleScore]) -> float:
        return geomean(_values(scores)) or 0.0

    return compute


def _ci_end(end: int, level: float) -> Metric:
    """One end (0 low, 1 high) of the BCa bootstrap interval of :func:`geomean_ok`."""

    def compute(scores: list[SampleScore]) -> float:
        ci = geomean_ci(_values(scores), level=level)
        return ci[end] if ci else 0.0

    return compute


@metric(scores="unreduced")
def ci_low(level: float = 0.95) -> Metric:
    """Lower end of the BCa bootstrap interval of :func:`geomean_ok`."""
    return _ci_end(0, level)


@metric(scores="unreduced")
def ci_high(level: float = 0.95) -> Metric:
    """Upper end of the BCa bootstrap interval of :func:`geomean_ok`."""
    return _ci_end(1, level)


@metric(scores="unreduced")
def fast_1_0() -> Metric:
    """Share of runs correct and faster than the upstream (KernelBench's fast_1)."""

    def compute(scores: list[SampleScore]) -> float:
        return fast_p(_values(scores), 1.0)

    return compute


@metric(scores="unreduced")
def fast_1_1() -> Metric:
    """Share of runs correct and at least 1.1x faster than the upstream (fast_1.1)."""

    def compute(scores: list[SampleScore]) -> float:
        return fast_p(_values(scores), 1.1)

    return compute


@metric(scores="unreduced")
def runs() -> Metric:
    """Number of scored runs (samples x epochs)."""

    def compute(scores: list[SampleScore]) -> float:
        return float(len(scores))

    return compute
