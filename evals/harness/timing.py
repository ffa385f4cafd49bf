"""Timing: warm-up, interleaved trials in random order, adaptive repetitions, robust statistics.

The loop is device-agnostic; a :class:`Timer` measures one call. The CPU timer uses
``perf_counter_ns``; GPU targets supply a timer built on CUDA events that flushes L2 first.
"""

from __future__ import annotations

import hashlib
import math
import random
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

# Standard error of the median of n normal samples is about sqrt(pi/2) * sigma / sqrt(n);
# sigma is estimated robustly as 1.4826 * MAD.
_MEDIAN_SE_FACTOR = math.sqrt(math.pi / 2.0)
_MAD_TO_SIGMA = 1.4826


@dataclass(frozen=True)
class TimingSettings:
    """Settings of the adaptive timing loop.

    Attributes:
        warmup: Untimed calls of each implementation (per input set) before timing.
        min_trials: Trials always run (each trial times every implementation once).
        max_trials: Upper bound on trials.
        target_rse: Stop once every implementation's relative standard error of the median is
            below this (0.005 = 0.5%).
        time_cap_s: Stop after this many seconds of timing for one scenario.
        fresh_queries: Refill q in place with new random values (seeded by
            :func:`call_seed`) before every timed call, untimed: no timed call repeats the
            inputs of an earlier one, so a cache keyed on the inputs' contents never hits
            (with 3 fixed input sets rotated, it hit on every call after the third).

    """

    warmup: int = 2
    min_trials: int = 5
    max_trials: int = 200
    target_rse: float = 0.005
    time_cap_s: float = 3.0
    fresh_queries: bool = False


BeforeCall = Callable[[str, int, int], None]
"""Called before each timed call (not warm-up) with the implementation, input set and trial."""


def call_seed(rng_seed: int, trial: int, name: str) -> int:
    """Seed of the fresh q of one timed call; the worker and the parent derive the same."""
    digest = hashlib.sha256(f"{rng_seed}/{trial}/{name}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def last_trial(trials: int, n_sets: int, index: int) -> int | None:
    """The last of ``trials`` trials that timed input set ``index`` (trial t uses t % n_sets)."""
    if index >= trials:
        return None
    return index + n_sets * ((trials - 1 - index) // n_sets)


class Timer(Protocol):
    """Measures one call. Implementations may do untimed preparation (e.g. an L2 flush)."""

    def time_us(self, fn: Callable[[], object]) -> float:
        """Run ``fn`` once and return its duration in microseconds."""
        ...


class PerfCounterTimer:
    """Wall-clock timer for synchronous CPU calls."""

    def time_us(self, fn: Callable[[], object]) -> float:
        """Time ``fn`` with ``time.perf_counter_ns``; microseconds."""
        start = time.perf_counter_ns()
        fn()
        return (time.perf_counter_ns() - start) / 1000.0


@dataclass(frozen=True)
class TimingStats:
    """Summary of one implementation's samples (times in microseconds)."""

    median_us: float
    mad_us: float
    min_us: float
    max_us: float
    rse: float
    n: int

    def to_json(self) -> dict[str, float | int]:
        """JSON form."""
        return {
            "median_us": self.median_us,
            "mad_us": self.mad_us,
            "min_us": self.min_us,
            "max_us": self.max_us,
            "rse": self.rse,
            "n": self.n,
        }


def summarize(samples_us: Sequence[float]) -> TimingStats:
    """Median, MAD and the relative standard error of the median of ``samples_us``."""
    if not samples_us:
        raise ValueError("no samples")
    med = statistics.median(samples_us)
    mad = statistics.median(abs(x - med) for x in samples_us)
    n = len(samples_us)
    se = _MEDIAN_SE_FACTOR * _MAD_TO_SIGMA * mad / math.sqrt(n)
    rse = se / med if med > 0 else math.inf
    return TimingStats(
        median_us=med, mad_us=mad, min_us=min(samples_us), max_us=max(samples_us), rse=rse, n=n
    )


@dataclass(frozen=True)
class TimingRun:
    """Result of :func:`measure`: per-implementation stats and why the loop stopped."""

    stats: Mapping[str, TimingStats]
    busy_s: Mapping[str, float]
    trials: int
    stop: str
    seconds: float


def measure(
    impls: Mapping[str, Sequence[Callable[[], object]]],
    *,
    timer: Timer,
    settings: TimingSettings,
    rng: random.Random,
    clock: Callable[[], float] = time.perf_counter,
    before: BeforeCall | None = None,
) -> TimingRun:
    """Time several implementations, interleaved in random order within each trial.

    Args:
        impls: Name to one callable per input set; trial ``t`` uses input set ``t % len``, so
            consecutive timed calls of one implementation see different inputs.
        timer: Measures one call.
        settings: Warm-up, trial bounds, target RSE and time cap.
        rng: Source of the per-trial order.
        clock: Seconds clock for the time cap.
        before: Untimed preparation of each timed call (e.g. a fresh q), given the
            implementation's name, the input set's index and the trial.

    Returns:
        Stats per implementation; ``busy_s`` is the time spent inside each implementation's
        calls (warm-up included); ``stop`` is ``"converged"``, ``"time_cap"`` or ``"max_trials"``.

    """
    names = list(impls)
    busy = dict.fromkeys(names, 0.0)
    for name, calls in impls.items():
        for fn in calls:
            for _ in range(settings.warmup):
                busy[name] += timer.time_us(fn) / 1e6
    samples: dict[str, list[float]] = {name: [] for name in names}
    start = clock()
    trials = 0
    stop = "max_trials"
    while trials < settings.max_trials:
        order = names[:]
        rng.shuffle(order)
        for name in order:
            calls = impls[name]
            index = trials % len(calls)
            if before is not None:
                before(name, index, trials)
            samples[name].append(timer.time_us(calls[index]))
        trials += 1
        if trials >= settings.min_trials:
            if all(summarize(s).rse < settings.target_rse for s in samples.values()):
                stop = "converged"
                break
            if clock() - start >= settings.time_cap_s:
                stop = "time_cap"
                break
    stats = {name: summarize(s) for name, s in samples.items()}
    for name, s in samples.items():
        busy[name] += sum(s) / 1e6
    return TimingRun(stats=stats, busy_s=busy, trials=trials, stop=stop, seconds=clock() - start)
