"""Timing: warm-up, interleaved trials in random order, adaptive repetitions, robust statistics.

The loop is device-agnostic; a :class:`Timer` measures one call. Each call gives two figures:
the **device time** (the headline: what speedups, geomeans and floors use) and the host's
**issue time** (the call's own host work before it returns). A separate, short round of
**call latency** samples (host work included, as a caller sees it) is kept for display only.

The CPU timer uses ``perf_counter_ns`` (device time is wall time there); GPU targets supply
a timer built on CUDA events (``evals.harness.measurement.gpu.CudaEventTimer``) that flushes L2 and
keeps the GPU busy with a spin kernel while the host issues the call, so host work never lands
inside the timed interval. The spin is sized per implementation from its measured issue time; a call
whose issue work outlasted the spin is discarded and the spin doubled.
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


MAX_STRICT_ROUNDS = 4
"""The most side-by-side rounds a strict re-run may take (each has inputs of its own)."""


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
        latency_rounds: Rounds of call-latency samples (host work included) per
            implementation, taken after warm-up; display only, never the headline.
        spin_min_us: Shortest spin hiding the host's issue work (GPU timers), microseconds.
        spin_max_us: Longest spin; a call whose issue work outlasts it is timed polluted.
        spin_factor: The spin is this many times the implementation's issue time (plus
            ``spin_min_us``), measured in warm-up.
        strict_tolerance: How much more the candidate may slow down in the strict re-run of a
            suspicious speedup (a fresh process, the upstreams timed right after it) than the
            machine did, as the upstream's figures show it (0.25 = 25%; see
            :func:`evals.harness.judging.retime.slowed_alone`).
        strict_rounds: Side-by-side rounds the strict re-run may take before it rejects a
            candidate that slowed alone in each (1 to :data:`MAX_STRICT_ROUNDS`; more where
            load can land on the candidate's side alone, as on a shared CPU's cores).
        accept_rse: A round that stopped on its time cap or trial bound is kept, with no
            second round on fresh inputs, when every implementation's relative standard error
            is at most this (0: only a converged round is; see :func:`settled`).
        gated_wall: GPU: the wall-clock check queues each batch behind the parent's gate
            and holds its time to the device time alone
            (:mod:`evals.harness.clock_checks.gated_batch`).

    """

    warmup: int = 2
    min_trials: int = 5
    max_trials: int = 200
    target_rse: float = 0.005
    time_cap_s: float = 3.0
    fresh_queries: bool = False
    latency_rounds: int = 5
    spin_min_us: float = 50.0
    spin_max_us: float = 20_000.0
    spin_factor: float = 2.0
    strict_tolerance: float = 0.25
    strict_rounds: int = 2
    accept_rse: float = 0.0
    gated_wall: bool = False

    def __post_init__(self) -> None:
        if not 1 <= self.strict_rounds <= MAX_STRICT_ROUNDS:
            raise ValueError(f"strict_rounds must be 1 to {MAX_STRICT_ROUNDS}")


BeforeCall = Callable[[str, int, int], None]
"""Called before each timed call (not warm-up) with the implementation, input set and trial."""


def call_seed(rng_seed: int, trial: int, name: str) -> int:
    """Seed of the fresh q of one timed call; the worker and the parent derive the same."""
    digest = hashlib.sha256(f"{rng_seed}/{trial}/{name}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


@dataclass(frozen=True)
class CallTime:
    """One timed call (microseconds).

    Attributes:
        device_us: Time the device spent on the call: the headline figure.
        issue_us: Host time the call itself took to return (its issue work on a GPU; the
            whole call on the CPU).
        hidden: Whether the host's issue work was hidden from ``device_us`` (on a GPU: it
            finished before the spin did); a call that was not is discarded and re-timed.

    """

    device_us: float
    issue_us: float
    hidden: bool = True


class Timer(Protocol):
    """Measures one call. Implementations may do untimed preparation (e.g. an L2 flush)."""

    def time_call(self, fn: Callable[[], object], *, spin_us: float) -> CallTime:
        """Run ``fn`` once; its device time with ``spin_us`` of device work hiding the host's."""
        ...

    def latency_us(self, fn: Callable[[], object]) -> float:
        """Run ``fn`` once; microseconds from issue to completion, host work included."""
        ...


class PerfCounterTimer:
    """Wall-clock timer for synchronous CPU calls: device, issue and latency are one figure."""

    def time_call(self, fn: Callable[[], object], *, spin_us: float = 0.0) -> CallTime:
        """Time ``fn`` with ``time.perf_counter_ns`` (``spin_us`` has no meaning here)."""
        us = self.latency_us(fn)
        return CallTime(device_us=us, issue_us=us)

    def latency_us(self, fn: Callable[[], object]) -> float:
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
    """Result of :func:`measure`.

    Attributes:
        stats: Device time per implementation (the headline), over calls whose host work
            was hidden.
        latency: Call latency per implementation (host work included; display only).
        issue: Host issue time per implementation, over every timed call.
        polluted: Timed calls per implementation discarded because the host's issue work
            outlasted the spin.
        spin_us: The spin each implementation ended with (microseconds; 0 on the CPU).
        busy_s: Time spent inside each implementation's calls (warm-up included).
        first_call_ms: Wall milliseconds of each implementation's first warm-up call in this
            process, kept out of every timed and latency figure (the worker reports an
            upstream's probe call instead, its first: FlashAttention-4's just-in-time compile).
        trials: Trials run; ``stop`` is ``"converged"``, ``"time_cap"`` or ``"max_trials"``.
        seconds: Wall seconds of the timed loop.
    """

    stats: Mapping[str, TimingStats]
    latency: Mapping[str, TimingStats]
    issue: Mapping[str, TimingStats]
    polluted: Mapping[str, int]
    spin_us: Mapping[str, float]
    busy_s: Mapping[str, float]
    first_call_ms: Mapping[str, float]
    trials: int
    stop: str
    seconds: float

    @property
    def converged(self) -> bool:
        """Whether every implementation's rse reached the target."""
        return self.stop == "converged"


@dataclass
class _Samples:
    """What the loop collected for one implementation."""

    spin_us: float
    device: list[float]
    issue: list[float]
    polluted: list[float]
    busy_s: float = 0.0
    first_call_ms: float = 0.0

    def take(self, call: CallTime, spin_max_us: float) -> None:
        """Keep a hidden call's device time; for a polluted one, double the spin."""
        self.issue.append(call.issue_us)
        self.busy_s += call.device_us / 1e6
        if call.hidden:
            self.device.append(call.device_us)
            return
        self.polluted.append(call.device_us)
        self.spin_us = min(spin_max_us, max(2 * self.spin_us, 2 * call.issue_us))

    def headline(self) -> list[float]:
        """Hidden calls' device times, or (when none was hidden) the polluted ones."""
        return self.device or self.polluted


def _warm_up(
    impls: Mapping[str, Sequence[Callable[[], object]]], timer: Timer, settings: TimingSettings
) -> dict[str, _Samples]:
    """Untimed-for-the-headline calls; each implementation's spin from its issue time."""
    out: dict[str, _Samples] = {}
    for name, calls in impls.items():
        issue, busy, first_ms = 0.0, 0.0, None
        for fn in calls:
            for _ in range(settings.warmup):
                t0 = time.perf_counter()
                call = timer.time_call(fn, spin_us=0.0)
                if first_ms is None:
                    first_ms = (time.perf_counter() - t0) * 1e3
                issue, busy = max(issue, call.issue_us), busy + call.device_us / 1e6
        spin = settings.spin_min_us + settings.spin_factor * issue
        out[name] = _Samples(min(settings.spin_max_us, spin), [], [], [], busy, first_ms or 0.0)
    return out


def _latency(
    impls: Mapping[str, Sequence[Callable[[], object]]],
    timer: Timer,
    rounds: int,
    rng: random.Random,
) -> dict[str, TimingStats]:
    """Call latency (host work included) over ``rounds`` rounds in random order."""
    samples: dict[str, list[float]] = {name: [] for name in impls}
    for r in range(rounds):
        order = list(impls)
        rng.shuffle(order)
        for name in order:
            calls = impls[name]
            samples[name].append(timer.latency_us(calls[r % len(calls)]))
    return {name: summarize(s) for name, s in samples.items() if s}


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
        settings: Warm-up, trial bounds, target RSE, time cap, latency rounds and spins.
        rng: Source of the per-trial order.
        clock: Seconds clock for the time cap.
        before: Untimed preparation of each timed call (e.g. a fresh q), given the
            implementation's name, the input set's index and the trial.

    Returns:
        Device-time stats per implementation and the rest of :class:`TimingRun`. Warm-up
        and latency rounds come first, so the last call of each input set is a timed one.

    """
    names = list(impls)
    collected = _warm_up(impls, timer, settings)
    latency = _latency(impls, timer, settings.latency_rounds, rng)
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
            collected[name].take(
                timer.time_call(calls[index], spin_us=collected[name].spin_us),
                settings.spin_max_us,
            )
        trials += 1
        if trials >= settings.min_trials:
            if all(_rse(c.device) < settings.target_rse for c in collected.values()):
                stop = "converged"
                break
            if clock() - start >= settings.time_cap_s:
                stop = "time_cap"
                break
    return TimingRun(
        stats={name: summarize(c.headline()) for name, c in collected.items()},
        latency=latency,
        issue={name: summarize(c.issue) for name, c in collected.items()},
        polluted={name: len(c.polluted) for name, c in collected.items()},
        spin_us={name: c.spin_us for name, c in collected.items()},
        busy_s={name: c.busy_s for name, c in collected.items()},
        first_call_ms={name: c.first_call_ms for name, c in collected.items()},
        trials=trials,
        stop=stop,
        seconds=clock() - start,
    )


def _rse(samples: Sequence[float]) -> float:
    """The rse of ``samples``; infinite below 3 samples (too few to judge convergence)."""
    return summarize(samples).rse if len(samples) >= 3 else math.inf
