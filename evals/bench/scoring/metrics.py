"""Metrics over every epoch's score (``scores="unreduced"``: each epoch is one draw).

Inspect reduces epochs to one score per sample before ordinary metrics run, and a task has one
sample, so reduced metrics would see a single number (zero-width intervals). These metrics see
one score per sample per epoch. Keyed by value name on the scorer's dict-valued scores:

- on ``success`` (1 when every scenario is correct): ``rate`` is the success rate, with its
  95% Wilson interval ``rate_lo`` / ``rate_hi``, and ``runs``;
- on ``speedup`` (geomean vs the upstream, 0 for a failed run): ``gmean`` over the successful
  runs with its 95% interval ``gm_lo`` / ``gm_hi`` (t on the log speedups; see
  :mod:`evals.stats.intervals`), and KernelBench's ``fast1.0`` / ``fast1.1`` (share of runs
  correct and strictly faster than 1.0x / 1.1x the upstream).

Registered names are short (Inspect's results table cuts names longer than about 13
characters, ``evals/`` included, at 80 columns: ``evals/wilso...`` hid which end was which).
An undefined value (no successful run) is reported as 0, as is an interval that cannot be
given (fewer than 2 successful runs, or all alike); the leaderboard shows a dash and why.
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


@metric("rate_lo", scores="unreduced")
def wilson_low(level: float = 0.95) -> Metric:
    """Lower end of the Wilson interval of the success rate, values 0/1 (shown as ``rate_lo``)."""
    return _wilson_end(0, level)


@metric("rate_hi", scores="unreduced")
def wilson_high(level: float = 0.95) -> Metric:
    """Upper end of the Wilson interval of the success rate, values 0/1 (shown as ``rate_hi``)."""
    return _wilson_end(1, level)


@metric("gmean", scores="unreduced")
def geomean_ok() -> Metric:
    """Geomean speedup of the successful runs, 0 if none succeeded (shown as ``gmean``)."""

    def compute(scores: list[SampleScore]) -> float:
        return geomean(_values(scores)) or 0.0

    return compute


def _ci_end(end: int, level: float) -> Metric:
    """One end (0 low, 1 high) of the interval of :func:`geomean_ok` (0 when there is none)."""

    def compute(scores: list[SampleScore]) -> float:
        ci = geomean_ci(_values(scores), level=level).bounds
        return ci[end] if ci else 0.0

    return compute


@metric("gm_lo", scores="unreduced")
def ci_low(level: float = 0.95) -> Metric:
    """Lower end of the interval of :func:`geomean_ok` (shown as ``gm_lo``)."""
    return _ci_end(0, level)


@metric("gm_hi", scores="unreduced")
def ci_high(level: float = 0.95) -> Metric:
    """Upper end of the interval of :func:`geomean_ok` (shown as ``gm_hi``)."""
    return _ci_end(1, level)


@metric("fast1.0", scores="unreduced")
def fast_1_0() -> Metric:
    """Share of runs correct and strictly faster than the upstream (KernelBench's fast_1)."""

    def compute(scores: list[SampleScore]) -> float:
        return fast_p(_values(scores), 1.0)

    return compute


@metric("fast1.1", scores="unreduced")
def fast_1_1() -> Metric:
    """Share of runs correct and strictly more than 1.1x faster than the upstream (fast_1.1)."""

    def compute(scores: list[SampleScore]) -> float:
        return fast_p(_values(scores), 1.1)

    return compute


@metric(scores="unreduced")
def runs() -> Metric:
    """Number of scored runs (samples x epochs)."""

    def compute(scores: list[SampleScore]) -> float:
        return float(len(scores))

    return compute
