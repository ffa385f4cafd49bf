"""The wall-clock check of one scenario: the parent's clock against the candidate's figures.

:mod:`evals.harness.clock_checks.wall_clock` holds the method (batches, U, the bound); this module
runs it on a scenario with every batch verified (:mod:`evals.harness.clock_checks.wall_verify`) and
the channel's cost measured by the parent (:mod:`evals.harness.clock_checks.channel_cost`), and
records what it found.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evals.harness.clock_checks import channel_cost, gated_setup
from evals.harness.clock_checks.null_batches import Kept
from evals.harness.clock_checks.wall_clock import (
    Clock,
    Plan,
    Rounds,
    WallFailure,
    measure,
    most_calls,
    run_round,
)
from evals.harness.clock_checks.wall_reading import (
    Reading,
    bound_us,
    conclude,
    figure_stats,
    judge,
    reported_us,
)
from evals.harness.clock_checks.wall_settings import WallSettings, wall_settings
from evals.harness.clock_checks.wall_verify import BatchVerifier
from evals.harness.failures import Code, Failure
from evals.harness.measurement.process_clock import CpuMeter, ProcessGone
from evals.harness.measurement.timing import TimingStats
from evals.harness.scenarios import Scenario
from evals.harness.verdict.record import ScenarioResult
from evals.harness.worker_link.protocol import KEEP_BYTES
from evals.harness.worker_link.session import Session, derive_seed
from evals.harness.worker_link.worker_client import WorkerClient, WorkerFailure

__all__ = ["check", "upstream_figure", "withhold"]


def gated(session: Session) -> bool:
    """Whether the candidate's batches are gated.

    They are on a GPU target whose timing settings ask for it (``gated_wall``) and refill each
    call's q (what the gate carries is the flips' offsets: without them a batch is not gated,
    and must not be judged by the gated bound), where the candidate's worker was given the gate.
    """
    client, target = session.client, session.target
    wanted = target.device == "cuda" and target.timing.gated_wall and target.timing.fresh_queries
    return wanted and client is not None and getattr(client, "gate", None) is not None


def check(
    session: Session,
    scenario: Scenario,
    result: ScenarioResult,
    *,
    device: TimingStats | None = None,
    issue: TimingStats | None = None,
    key: str = "wall_clock",
    seeds: Sequence[int] | None = None,
    clock: Clock | None = None,
) -> Failure | None:
    """Hold the candidate's reported times to the parent's clock on one scenario.

    Args:
        session: The run (its client is the candidate's worker).
        scenario: The scenario just timed.
        result: Its result: ``checks[key]`` says what was found; ``timing`` gets ``wall_us``
            (U, microseconds) and the figures behind it (the strict re-run's under
            ``strict_wall``); ``seconds['wall_clock']`` the check's seconds.
        device: The candidate's device-time stats; by default ``result.times['candidate']``
            (and then ``issue`` is ``result.issue['candidate']``).
        issue: Its host issue-time stats, if the target has them.
        key: The check's name in ``result.checks`` (``wall_clock``, or
            ``strict_wall_clock`` in the strict re-run).
        seeds: The input seeds of the timing round whose figures are checked: the batches
            run on the same input sets (the same work; a ragged KV cache's lengths come from
            them), each call with its own fresh q. None: one set from the check's own seed.
        clock: The clock the batches are timed on, seconds (tests). None: on a CPU target,
            the worker's critical path of CPU time where the kernel offers it
            (:mod:`evals.harness.measurement.process_clock`), else the parent's wall clock.

    Returns:
        ``stale_result`` when a verified batch call did not do its work, ``timing_mismatch``
        when U exceeds what the reported figures explain, or None. On a contract scenario a
        U the figures do not explain withholds its speedups instead (:func:`withhold`).
    """
    if device is None:
        device, issue = result.times.get("candidate"), result.issue.get("candidate")
    if device is None:
        result.checks[key] = "skipped: the candidate was not timed"
        return None
    gate = gated(session)
    settings = wall_settings(session.target.device, gated=gate)
    # gated, the host's issue work is out of the interval: the device time alone explains U
    reported = reported_us(device, None if gate else issue, serial=settings.serial)
    try:
        run = _run(session, scenario, result, reported, key=key, seeds=seeds, clock=clock,
                   gate=gate)  # fmt: skip
    except WallFailure as exc:
        result.checks[key] = f"failed: {exc.failure.reason}"
        return exc.failure
    return _record(session, result, key, run, reported)


@dataclass(frozen=True)
class _Run:
    """One check's batches, the rounds they took, and how they were run and verified."""

    rounds: Rounds
    verifier: BatchVerifier
    plan: Plan
    settings: WallSettings


def _run(
    session: Session,
    scenario: Scenario,
    result: ScenarioResult,
    reported: float,
    *,
    key: str,
    seeds: Sequence[int] | None,
    clock: Clock | None = None,
    impl: str = "candidate",
    gate: bool = False,
) -> _Run:
    """Prepare the worker of ``impl``, run the batches, verify them (see :func:`check`).

    The candidate's batches are sized from ``reported`` and its readings, and rounds follow
    while U fails :func:`judge`; an upstream's are one round sized from its readings alone
    (a burst of load on its own timing round must not shrink its batches). ``gate``: the
    candidate's batches are queued behind its worker's gate (:func:`gated`).

    Raises:
        WallFailure: A batch did not do its work, or the worker exited meanwhile.
    """
    t0 = time.monotonic()
    prepare_s = 0.0
    candidate = impl == "candidate"
    client = session.client if candidate else session.upstreams
    assert client is not None  # an upstream's figure is measured only where they have a worker
    gate = gate and candidate
    settings = wall_settings(session.target.device, gated=gate)
    timeout = session.target.limits.call_timeout_s
    seed = derive_seed(session.seed, scenario.id, "wall", key)
    sets = list(seeds or [seed])
    meter = _cpu_meter(session, client) if clock is None else None
    mask_seed = derive_seed(seed, "mask")
    verifier = BatchVerifier(
        session,
        scenario,
        sets,
        key=key,
        timeout_s=timeout,
        cpu_time=meter is not None,
        mask_seed=mask_seed,
        client=client,
        accuracy=candidate,
        gated=gate,
    )
    plan = _plan(session, scenario, client, verifier, meter=meter, gate=gate)
    prepare = {"op": "wall", "scenario": scenario.to_json(), "seeds": sets, "mask_seed": mask_seed}
    if plan.gated is not None:
        prepare, plan = gated_setup.prepared(session, scenario, prepare, plan, seed=seed)
    try:
        t_prepare = time.monotonic()  # the worker making its input sets and flips
        client.request(prepare if candidate else {**prepare, "impl": impl}, timeout_s=timeout)
        prepare_s = time.monotonic() - t_prepare
        rounds = _batches(client, reported, settings, seed, plan, clock, candidate)
        verifier.settle()  # the outputs' accuracy, now that the worker let its inputs go
    finally:
        spent = time.monotonic() - t0
        result.seconds["wall_clock"] = result.seconds.get("wall_clock", 0.0) + spent
        session.tally.reference_s += verifier.seconds
        for part, seconds in {**verifier.parts, "wall_prepare": prepare_s}.items():
            result.seconds[part] = result.seconds.get(part, 0.0) + seconds
    return _Run(rounds, verifier, plan, settings)


def _plan(
    session: Session,
    scenario: Scenario,
    client: WorkerClient,
    verifier: BatchVerifier,
    *,
    meter: CpuMeter | None,
    gate: bool,
) -> Plan:
    """The batches' plan: the channel's cost, what a batch may keep, the gated link if any."""
    out = session.target.expected_output(scenario)
    out_bytes = max(1, math.prod(out.shape) * out.dtype.itemsize)
    return Plan(
        ping_s=channel_cost.round_trip_s(),
        verify=verifier,
        max_calls=max(1, KEEP_BYTES // out_bytes),
        timeout_s=session.target.limits.call_timeout_s,
        meter=meter,
        q_numel=verifier.q_numel,
        gated=gated_setup.link(client) if gate and verifier.q_numel else None,
        parent_sized=session.target.device == "cpu",
    )


def _batches(
    client: WorkerClient,
    reported: float,
    settings: WallSettings,
    seed: int,
    plan: Plan,
    clock: Clock | None,
    candidate: bool,
) -> Rounds:
    """The prepared worker's batches and the rounds they took; its inputs let go after.

    The candidate's rounds follow while U fails; an upstream's is one round sized from the
    parent's own readings (nothing to judge).

    Raises:
        WallFailure: ``crash``: the worker exited during the check.
    """
    clock = clock or time.perf_counter
    try:
        if candidate:
            return measure(client, reported, settings, seed=seed, plan=plan, clock=clock)
        batches = run_round(client, 0.0, settings, seed=seed, plan=plan, clock=clock)
        return Rounds(batches, 1, len(batches))
    except ProcessGone as exc:
        failure = Failure(Code.CRASH, "the worker exited during the wall-clock check")
        raise WallFailure(failure) from exc
    finally:
        client.request({"op": "wall", "drop": True}, timeout_s=plan.timeout_s)
        if plan.null is not None:
            plan.null.drop()


def _cpu_meter(session: Session, client: WorkerClient) -> CpuMeter | None:
    """The worker's CPU-time meter on a CPU target, where the kernel offers one."""
    proc = client.proc
    if session.target.device != "cpu" or proc is None:
        return None
    return CpuMeter.of(proc.pid)


def _record(
    session: Session, result: ScenarioResult, key: str, run: _Run, reported: float
) -> Failure | None:
    """Record the figures and the decision of a check whose batches all did their work.

    ``timing[NAME_us]`` is U and ``timing[NAME]`` the figures behind it (NAME: ``wall``,
    ``strict_wall``, ...), with ``figure_us``: the per-call stats over the batches that
    counted, the time a CPU target's speedups use (:mod:`evals.harness.clock_checks.parent_figure`).
    """
    settings = run.settings
    reading, figures = _reading(session, run, reported)
    name = key.removesuffix("_clock")
    result.timing[f"{name}_us"] = reading.per_call_us
    result.timing[name] = figures
    session.tally.candidate_s += sum(max(0.0, b.wall_s - b.ping_s) for b in run.rounds.batches)
    bound = float(figures["bound_us"])  # the same bound the record holds
    failure = judge(reading, reported, settings)
    if failure is not None and result.scenario.contract:
        withhold(result, key, failure)
        return None
    if failure is not None:
        result.checks[key] = f"failed: {failure.reason}"
        return failure
    if run.plan.null is not None:  # judged again once the candidate is gone (null_recheck.py)
        kept = Kept(key, tuple(run.rounds.batches), reported, settings, most_calls(run.plan),
                    run.plan.null)  # fmt: skip
        session.null_rechecks.setdefault(result.scenario.id, []).append(kept)
    cpu = isinstance(run.plan.meter, CpuMeter)
    meter = "; the worker's busiest thread's CPU time" if cpu else ""
    if run.plan.gated is not None:
        meter = "; each batch queued behind the parent's gate, the device time alone reported"
    result.checks[key] = (
        f"passed: the parent's clock saw {reading.per_call_us:.1f} us per call (best of "
        f"{reading.batches} batches of back-to-back calls, {reading.calls} calls{meter}; "
        f"{run.verifier.describe()}) <= {1 + settings.tolerance:g} x {reported:.1f} us "
        f"reported + {bound - reported * (1 + settings.tolerance):.1f} us"
    )
    return None


def _reading(session: Session, run: _Run, reported: float) -> tuple[Reading, dict[str, Any]]:
    """The batches' reading and the figures behind it, for the verdict.

    The reading (U, which the check judges) is over every round; ``figure_us`` and
    ``gross_us`` are :func:`_figure_reading`'s, and so are the flips and digests per call.
    """
    settings = run.settings
    rounds = run.rounds
    reading = conclude(rounds.batches, reported, settings, most_calls(run.plan))
    figure = _figure_reading(run)
    first = rounds.first_round
    link = run.plan.gated
    # gated: the worker's batches thrown away so far in this run (arming blocked), and the
    # calls a batch may now hold
    arming = {} if link is None else {"arm_blocked": link.blocked, "arm_ceiling": link.ceiling}
    return reading, {
        **reading.to_json(),
        "rounds": rounds.rounds,
        "reported_us": reported,
        "bound_us": bound_us(reported, settings, reading.best_calls),
        "verified": run.verifier.verified,
        # per call of a batch (a larger batch's total over the best batch's calls overstated it)
        "digest_us": max(b.digest_s / b.calls for b in first) * 1e6,
        "flip_us": max(b.flip_s / b.calls for b in first) * 1e6,
        "meter": "worker_cpu" if isinstance(run.plan.meter, CpuMeter) else "parent_wall",
        "gated": link is not None,
        **arming,
        "figure_batches": figure.batches,
        "figure_us": figure_stats(figure).to_json(),
        "gross_us": figure_stats(figure, gross=True).to_json(),
    }


def _figure_reading(run: _Run) -> Reading:
    """The reading of the check's first round alone, whatever the candidate reported.

    The same for every implementation: one round of ``settings.batches`` batches (a CPU
    target's sized from the parent's readings alone, :attr:`Plan.parent_sized`), the planned
    size from those readings. Later rounds follow only a U its reports did not explain, so a
    forged report would buy more batches and a smaller fastest one; an upstream never has them.
    """
    return conclude(run.rounds.first_round, 0.0, run.settings, most_calls(run.plan))


def upstream_figure(
    session: Session,
    scenario: Scenario,
    result: ScenarioResult,
    name: str,
    *,
    reported: float,
    seeds: Sequence[int],
    gross: bool = False,
    record: str = "upstream_wall",
) -> TimingStats:
    """Upstream ``name``'s time per call on the parent's clock, by the candidate's method.

    The same batches in the upstreams' worker (back to back, a fresh q a call, every output
    kept and digested), metered the same way; their outputs are held to their digests only.
    Its figures are recorded under ``timing[record][name]``: a re-time records under its own
    key, so the first round's record stays beside the figure it gave.

    Args:
        session: The run (``session.upstreams`` is the upstreams' worker).
        scenario: The scenario timed.
        result: Its result (seconds and figures are recorded there).
        name: The upstream.
        reported: The upstream's own timed median, microseconds (for the record).
        seeds: The input seeds of the timing round it is measured beside.
        gross: Whether the figure keeps the batches' flips and digests in (small calls).
        record: The verdict's ``timing`` key its figures are recorded under.

    Raises:
        WorkerFailure: ``harness_error``: the upstreams' worker failed (never the candidate's).
    """
    key = f"upstream_wall_clock:{name}"
    try:
        run = _run(session, scenario, result, 0.0, key=key, seeds=seeds, impl=name)
    except WallFailure as exc:
        reason = f"the upstreams' worker failed its wall-clock batches: {exc.failure.reason}"
        raise WorkerFailure(Failure(Code.HARNESS_ERROR, reason)) from exc
    _, figures = _reading(session, run, 0.0)
    del figures["bound_us"]  # nothing is judged
    result.timing.setdefault(record, {})[name] = {**figures, "reported_us": reported}
    session.tally.upstream_s += sum(max(0.0, b.wall_s - b.ping_s) for b in run.rounds.batches)
    # the figure the record holds, read as the candidate's is (parent_figure._figure)
    return TimingStats(**figures["gross_us" if gross else "figure_us"])


def withhold(result: ScenarioResult, key: str, failure: Failure) -> None:
    """A contract scenario's times the parent's clock could not confirm: withheld, not failed.

    A contract scenario gates correctness only; its speed enters no headline, so a forged
    timer gains nothing there, while an honest call of a few keys costs less than a batch's
    own per-call work (a flip, a digest, a kept output), which a busy host inflates past any
    fixed bound (THREATS.md's known limits give the measured costs). Its
    speedups become None (out of the contract geomean and every report); the batches' outputs
    were verified all the same (a skipped call is still ``stale_result``).
    """
    reason = f"times unverified: {failure.reason}"
    result.timing["unverified"] = reason
    result.checks[key] = f"not counted (a contract scenario; its speedups are withheld): {reason}"
    result.flags.append(reason)
