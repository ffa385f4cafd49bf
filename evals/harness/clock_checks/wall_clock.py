"""The parent's own clock on the candidate's calls: a bound its process cannot reach.

The candidate is timed inside its worker, the process that also holds the candidate's library:
a candidate that tampered with the in-process timer (CUDA events, clocks), or left work
running after its call returned, could report times it did not take. So after a scenario is
timed, the parent asks the worker for batches of back-to-back calls (the worker's ``wall``
op, on the input sets of the timing round it checks, so the batches do the timed calls' work;
each call with its own fresh q, made inside the batch from secrets the request carries,
where the target refills queries (:mod:`evals.harness.clock_checks.query_flips`): nothing computed
before the request can stand in for a call) and times each batch request itself, less the parent's
own cost of those flips and the channel's round trip. On a GPU the meter is the parent's
:func:`time.perf_counter`; on the CPU it is the worker's critical path of CPU time as the kernel
counts it, its busiest thread's (:mod:`evals.harness.measurement.process_clock`: a busy host's waits
are not the kernel's). The smallest per-call figure over the batches,

    U = min over batches of (request - flips - digests - round trip) / calls

(a gated batch on a GPU has instead the same batch of calls that do nothing subtracted, timed
where no candidate runs: :mod:`evals.harness.clock_checks.null_batches`),
bounds the true per-call time from above (noise only adds time, and the work cannot take less
wall time than it needs) while staying close to it. Nothing the candidate's process says is
subtracted: the no-op round trip is the parent's own
(:mod:`evals.harness.clock_checks.channel_cost`, a process that could inflate its no-op would shrink
U), and every call of a batch must have done its work: the worker answers a batch with a digest of
each call's output, and only then does the parent choose one call at random, fetch its output, and
check it against the digest and the float64 reference
(:mod:`evals.harness.clock_checks.wall_verify`); the digests' own cost, timed by the
parent on the fetched output, is subtracted too. The candidate's reported figures must explain U:

    U <= reported x (1 + tolerance) + margin + overhead / calls,

where the reported figure is, on the CPU, the larger of the device and host issue medians (the
host is the device), and on a GPU their sum: a call that synchronises cannot overlap its host
work with its kernels, and back to back costs both. (FA3 judged against itself on the H200's
ragged dev scenario: U = 665 us against 469 us device and 163 us issue time; its batches then
also ran on other ragged lengths than its timed calls, one set from the check's own seed.)

The check is one-sided on purpose: on a GPU the back-to-back batch runs with a warm L2 and may
take less than the cold-L2 device time, and a cache the output checks let through only makes
U smaller. A round that fails is followed by longer ones (a burst of load on a shared
machine passes; a candidate whose reported times are too small fails them all).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from evals.harness.clock_checks import query_flips
from evals.harness.clock_checks.gated_batch import (
    MIN_ARMED_CALLS,
    Blocked,
    GatedLink,
    blocked_failure,
)
from evals.harness.clock_checks.null_batches import NullBatches
from evals.harness.clock_checks.wall_reading import Batch, calls_for, conclude, judge, read
from evals.harness.clock_checks.wall_settings import GROWTH, WallSettings
from evals.harness.failures import Code, Failure
from evals.harness.worker_link.channel import Buffer
from evals.harness.worker_link.session import derive_seed

Clock = Callable[[], float]
"""Seconds; the parent's :func:`time.perf_counter` outside tests."""
Meter = Callable[[Callable[[], Any]], tuple[float, Any]]
"""Runs a request and says how long it took, seconds, with its answer
(:class:`evals.harness.measurement.process_clock.CpuMeter` on the CPU)."""


class Client(Protocol):
    """What the check needs of :class:`evals.harness.worker_link.worker_client.WorkerClient`."""

    def request(
        self, header: dict[str, Any], timeout_s: float | None = None
    ) -> tuple[dict[str, Any], Buffer]:
        """Send ``header``; the worker's answer."""
        ...


class Verifier(Protocol):
    """Checks one batch's outputs.

    Implemented by :class:`evals.harness.clock_checks.wall_verify.BatchVerifier`.
    """

    def __call__(
        self, *, calls: int, shifts: Sequence[int], digest_seed: int, digests: list[str]
    ) -> float:
        """Verify the batch (raises :class:`WallFailure`); the digests' cost, seconds."""
        ...

    def flip_cost(self, calls: int) -> float:
        """Flipping the queries of a batch of ``calls``, seconds, as the parent does it."""
        ...


class WallFailure(Exception):
    """A batch that did not do its work: carries the failure."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.reason)
        self.failure = failure


@dataclass(frozen=True)
class Plan:
    """How the batches of one check are run and verified.

    Attributes:
        ping_s: The channel's round trip as the parent measured it, seconds (subtracted).
        verify: Checks each batch's outputs; None only in tests of the timing alone.
        max_calls: Calls a batch may have at most (the outputs it may keep).
        timeout_s: Per request, seconds.
        meter: Times the batches' requests; None: the ``clock`` the check runs on.
        q_numel: Elements of a call's q where each call's q is flipped afresh in the batch
            (:mod:`evals.harness.clock_checks.query_flips`), else 0.
        gated: Queue each batch behind the worker's gate and time it from the opening
            (:mod:`evals.harness.clock_checks.gated_batch`); None: ungated.
        null: The same batches with calls that do nothing, where no candidate runs, to
            subtract from each batch of the same size
            (:mod:`evals.harness.clock_checks.null_batches`); None: the round trip, flips and
            digests are subtracted instead.
        parent_sized: Size the first round from the parent's readings alone, never from the
            reported figure. On a CPU target that round is the figure every speedup uses
            (:mod:`evals.harness.clock_checks.parent_figure`), measured as each upstream's is:
            a forged clock's smaller report once bought it longer batches there, whose
            per-request costs spread thinner.
    """

    ping_s: float = 0.0
    verify: Verifier | None = None
    max_calls: int | None = None
    timeout_s: float | None = None
    meter: Meter | None = None
    q_numel: int = 0
    gated: GatedLink | None = None
    null: NullBatches | None = None
    parent_sized: bool = False


@dataclass(frozen=True)
class Rounds:
    """A check's batches and the rounds they took.

    Attributes:
        batches: Every round's batches, in the order they ran.
        rounds: The rounds run.
        first: How many of ``batches`` the first round ran: the figure's batches (``figure_us``
            in :mod:`evals.harness.clock_checks.wall_check`'s record). Later rounds run only
            while U fails, which a forged report brings about: the more batches, the smaller
            the fastest, so they decide the check and never the figure.
    """

    batches: list[Batch]
    rounds: int
    first: int

    @property
    def first_round(self) -> list[Batch]:
        """The first round's batches: the figure's."""
        return self.batches[: self.first]


def run_round(
    client: Client,
    reported: float,
    settings: WallSettings,
    *,
    count: int | None = None,
    seed: int = 0,
    plan: Plan = Plan(),
    budget_s: float | None = None,
    clock: Clock = time.perf_counter,
    before: Sequence[Batch] = (),
    scale: float = 1.0,
) -> list[Batch]:
    """One round of up to ``count`` batches (default ``settings.batches``).

    ``before``: the batches of earlier rounds, whose sizes and readings this round goes on
    from (a later round does not start over from the smallest batch); ``scale``: how many
    times ``settings.batch_us`` its batches aim at (see :func:`_next_calls`).

    The round starts with the worker making what its digests need (untimed). Each
    batch is a no-op (for the record) and the batch, with its calls' flip offsets drawn from
    ``seed``, both timed on ``plan.meter`` (default: ``clock``); then the batch is verified
    (``plan.verify``), which also says what the digests and flips cost the parent. The first
    batch has ``min_calls`` calls;
    each later one is sized from the larger of ``reported`` (microseconds) and the parent's
    reading so far, growing at most :data:`GROWTH`-fold on the largest so far (a short
    batch's reading carries the request's whole overhead: sized from it alone, batches of
    short calls would stay short). No batch starts once ``budget_s`` (default
    ``settings.budget_s``) has passed and a batch of the planned size has run.
    """
    budget = settings.budget_s if budget_s is None else budget_s
    start = clock()
    batches: list[Batch] = []
    calls = _capped(_next_calls(before, reported, settings, plan.max_calls, scale, budget), plan)
    # the digests' weights made once per round, before any batch (fresh ones per batch would
    # put their generation, milliseconds for a large GPU output, inside the meter)
    digest_seed = derive_seed(seed, "digest")
    client.request({"op": "wall", "warm": digest_seed}, timeout_s=plan.timeout_s)
    meter = plan.meter or _metered(clock)
    while len(batches) < (settings.batches if count is None else count):
        # a batch thrown away had its offsets written to the gate: the next draws anew
        retry = (plan.gated.blocked,) if plan.gated is not None and plan.gated.blocked else ()
        offsets = query_flips.shifts(derive_seed(seed, "flips", len(batches), *retry), calls,
                                     plan.q_numel) if plan.q_numel else []  # fmt: skip
        noop = {"op": "wall", "n": 0}
        worker_ping = _round_trip(client, noop, plan.timeout_s, meter)[0]
        batch = {"op": "wall", "n": calls, "digest_seed": digest_seed, "shifts": offsets}
        timed = _timed_batch(client, batch, offsets, plan, meter)
        if timed is None:  # not armed: thrown away, the ceiling cut
            calls = _capped(calls, plan)
            continue
        wall, header = timed
        digest_s = _verified(plan, header, calls, offsets, digest_seed)
        said = header.get("batch_s")
        worker_s = float(said) if isinstance(said, int | float) else 0.0  # the record only
        flip_s = plan.verify.flip_cost(calls) if plan.verify is not None else 0.0
        null_s = None
        if plan.null is not None:  # the null batches' time is not the round's
            before_null = clock()
            null_s = plan.null.wall_s(calls)
            start += clock() - before_null
        batches.append(
            Batch(calls, wall, plan.ping_s, worker_s, digest_s, worker_ping, flip_s, null_s)
        )
        left = budget - (clock() - start)
        calls = _next_calls([*before, *batches], reported, settings, plan.max_calls, scale, left)
        calls = _capped(calls, plan)
        planned = any(b.calls >= calls for b in batches)
        if planned and left <= 0:
            break
    return batches


def _timed_batch(
    client: Client, batch: dict[str, Any], offsets: list[int], plan: Plan, meter: Meter
) -> tuple[float, dict[str, Any]] | None:
    """The batch's seconds on ``meter`` and its answer; None where a gated one was not armed.

    Raises:
        WallFailure: :func:`blocked_failure`: a gated batch's first call waited on the device
            (``host_work``), or one of :data:`MIN_ARMED_CALLS` calls or fewer could not be armed.
    """
    if plan.gated is None:
        return _round_trip(client, batch, plan.timeout_s, meter)
    try:
        return plan.gated.round_trip(client, batch, offsets, plan.timeout_s, meter)
    except Blocked as blocked:
        calls = int(batch["n"])
        if blocked.waited or calls <= MIN_ARMED_CALLS:
            failure = blocked_failure(plan.gated, calls, waited=blocked.waited)
            raise WallFailure(failure) from None
        return None


def _verified(
    plan: Plan, header: dict[str, Any], calls: int, offsets: list[int], digest_seed: int
) -> float:
    """The batch's outputs checked against its digests; the digests' cost to the parent, s.

    Raises:
        WallFailure: ``timing_mismatch``: not one digest a call (the candidate's process wrote
            the answer: strings or a failure); or what ``plan.verify`` raises.
    """
    if plan.verify is None:
        return 0.0
    raw = header.get("digests")
    strings = isinstance(raw, list) and all(isinstance(d, str) for d in raw)
    digests = list(raw) if isinstance(raw, list) and strings else []
    if len(digests) != calls:
        got = len(raw) if isinstance(raw, list) else "no"
        reason = f"a wall-clock batch of {calls} calls answered {got} digests"
        raise WallFailure(Failure(Code.TIMING_MISMATCH, reason))
    return plan.verify(calls=calls, shifts=offsets, digest_seed=digest_seed, digests=digests)


def most_calls(plan: Plan) -> int | None:
    """The calls a batch may hold: the outputs it may keep, and a gated link's ceiling.

    The planned size that decides which batches count (:func:`conclude`) is held to it: a
    ceiling cut under the planned size (arming blocked) would otherwise leave no batch of that
    size, and the sizing batches of two or eight calls, whose overhead is most of their time,
    would count.
    """
    if plan.gated is None:
        return plan.max_calls
    return min(plan.gated.ceiling, plan.max_calls or plan.gated.ceiling)


def _capped(calls: int, plan: Plan) -> int:
    """``calls`` within what a gated batch may hold (:attr:`GatedLink.ceiling`)."""
    return calls if plan.gated is None else max(1, min(calls, plan.gated.ceiling))


def _next_calls(
    batches: Sequence[Batch],
    reported: float,
    settings: WallSettings,
    max_calls: int | None,
    scale: float = 1.0,
    left_s: float = math.inf,
) -> int:
    """The next batch's calls: ``min_calls`` first, then sized from the readings so far.

    A later round (``scale`` > 1) sizes from the reported figure alone, ``scale`` times
    longer: a round that failed may have been sized from a reading a busy host inflated
    (each request's wake-ups spread over few calls), and longer batches spread them thinner;
    but never longer than the reading so far says fits in ``left_s`` seconds (a call far
    slower than it claims cannot run a long batch).
    """
    if not batches:
        return calls_for(math.inf, settings, max_calls)
    reading = read(batches).per_call_us
    if scale <= 1:
        return min(calls_for(max(reported, reading), settings, max_calls),
                   GROWTH * max(b.calls for b in batches))  # fmt: skip
    fits = math.floor(max(0.0, left_s) * 1e6 / max(reading, 1e-3))
    wanted = min(calls_for(reported, settings, max_calls, scale), max(settings.min_calls, fits))
    return min(wanted, GROWTH * max(b.calls for b in batches))


def measure(
    client: Client,
    reported: float,
    settings: WallSettings,
    *,
    seed: int = 0,
    plan: Plan = Plan(),
    clock: Clock = time.perf_counter,
) -> Rounds:
    """The batches behind U and the rounds they took (see :class:`WallSettings`).

    A first round within ``budget_s`` (sized from the parent's readings alone where
    ``plan.parent_sized``); while U fails :func:`judge`, up to ``retries`` more rounds of
    twice the batches each, none started after ``max_s``.
    """
    start = clock()
    sizing = 0.0 if plan.parent_sized else reported
    batches = run_round(client, sizing, settings, seed=seed, plan=plan, clock=clock)
    first = len(batches)
    rounds, count = 1, settings.batches
    while rounds <= settings.retries:
        reading = conclude(batches, reported, settings, most_calls(plan))
        if judge(reading, reported, settings) is None:
            break
        left = settings.max_s - (clock() - start)
        if left <= 0:
            break
        count *= 2
        batches += run_round(
            client,
            reported,
            settings,
            count=count,
            seed=derive_seed(seed, "round", rounds),
            plan=plan,
            budget_s=left,
            clock=clock,
            before=batches,
            scale=float(GROWTH**rounds),
        )
        rounds += 1
    return Rounds(batches, rounds, first)


def _metered(clock: Clock) -> Meter:
    """A meter reading ``clock`` before and after the request."""

    def meter(request: Callable[[], Any]) -> tuple[float, Any]:
        t0 = clock()
        answer = request()
        return clock() - t0, answer

    return meter


def _round_trip(
    client: Client, header: dict[str, Any], timeout_s: float | None, meter: Meter
) -> tuple[float, dict[str, Any]]:
    seconds, (answer, _) = meter(lambda: client.request(header, timeout_s=timeout_s))
    return seconds, answer
