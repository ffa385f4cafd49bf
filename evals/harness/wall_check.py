"""The wall-clock check of one scenario: the parent's clock against the candidate's figures.

:mod:`evals.harness.wall_clock` holds the method (batches, U, the bound); this module runs it
on a scenario with every batch verified (:mod:`evals.harness.wall_verify`) and the channel's
cost measured by the parent (:mod:`evals.harness.channel_cost`), and records what it found.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from evals.harness import channel_cost
from evals.harness.failures import Code, Failure
from evals.harness.process_clock import CpuMeter, ProcessGone
from evals.harness.scenarios import Scenario
from evals.harness.session import Session, derive_seed
from evals.harness.timing import TimingStats
from evals.harness.verdict import ScenarioResult
from evals.harness.wall_clock import (
    Batch,
    Clock,
    Plan,
    WallFailure,
    bound_us,
    conclude,
    judge,
    measure,
    reported_us,
)
from evals.harness.wall_settings import wall_settings
from evals.harness.wall_verify import BatchVerifier
from evals.harness.worker.protocol import KEEP_BYTES

__all__ = ["check", "withhold"]


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
            (:mod:`evals.harness.process_clock`), else the parent's wall clock.

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
    t0 = time.monotonic()
    prepare_s = 0.0
    settings = wall_settings(session.target.device)
    reported = reported_us(device, issue, serial=settings.serial)
    timeout = session.target.limits.call_timeout_s
    seed = derive_seed(session.seed, scenario.id, "wall", key)
    sets = list(seeds or [seed])
    meter = _cpu_meter(session) if clock is None else None
    mask_seed = derive_seed(seed, "mask")
    verifier = BatchVerifier(
        session,
        scenario,
        sets,
        key=key,
        timeout_s=timeout,
        cpu_time=meter is not None,
        mask_seed=mask_seed,
    )
    out = session.target.expected_output(scenario)
    out_bytes = max(1, math.prod(out.shape) * out.dtype.itemsize)
    plan = Plan(
        ping_s=channel_cost.round_trip_s(),
        verify=verifier,
        max_calls=max(1, KEEP_BYTES // out_bytes),
        timeout_s=timeout,
        meter=meter,
        q_numel=verifier.q_numel,
    )
    try:
        t_prepare = time.monotonic()  # the worker making its input sets and flips
        session.client.request(
            {"op": "wall", "scenario": scenario.to_json(), "seeds": sets, "mask_seed": mask_seed},
            timeout_s=timeout,
        )
        prepare_s = time.monotonic() - t_prepare
        try:
            batches, rounds = measure(
                session.client,
                reported,
                settings,
                seed=seed,
                plan=plan,
                clock=clock or time.perf_counter,
            )
        except WallFailure as exc:
            result.checks[key] = f"failed: {exc.failure.reason}"
            return exc.failure
        except ProcessGone:
            failure = Failure(Code.CRASH, "the worker exited during the wall-clock check")
            result.checks[key] = f"failed: {failure.reason}"
            return failure
        finally:
            session.client.request({"op": "wall", "drop": True}, timeout_s=timeout)
        try:  # the outputs' accuracy, now that the worker let its inputs go
            verifier.settle()
        except WallFailure as exc:
            result.checks[key] = f"failed: {exc.failure.reason}"
            return exc.failure
    finally:
        spent = time.monotonic() - t0
        result.seconds["wall_clock"] = result.seconds.get("wall_clock", 0.0) + spent
        session.tally.reference_s += verifier.seconds
        for part, seconds in {**verifier.parts, "wall_prepare": prepare_s}.items():
            result.seconds[part] = result.seconds.get(part, 0.0) + seconds
    return _record(session, result, key, batches, rounds, reported, verifier, plan)


def _cpu_meter(session: Session) -> CpuMeter | None:
    """The worker's CPU-time meter on a CPU target, where the kernel offers one."""
    proc = session.client.proc
    if session.target.device != "cpu" or proc is None:
        return None
    return CpuMeter.of(proc.pid)


def _record(
    session: Session,
    result: ScenarioResult,
    key: str,
    batches: list[Batch],
    rounds: int,
    reported: float,
    verifier: BatchVerifier,
    plan: Plan,
) -> Failure | None:
    """Record the figures and the decision of a check whose batches all did their work."""
    settings = wall_settings(session.target.device)
    reading = conclude(batches, reported, settings, plan.max_calls)
    session.tally.candidate_s += sum(max(0.0, b.wall_s - b.ping_s) for b in batches)
    bound = bound_us(reported, settings, reading.best_calls)
    figures = {
        **reading.to_json(),
        "rounds": rounds,
        "reported_us": reported,
        "bound_us": bound,
        "verified": verifier.verified,
        # per call of a batch (a larger batch's total over the best batch's calls overstated it)
        "digest_us": max(b.digest_s / b.calls for b in batches) * 1e6,
        "flip_us": max(b.flip_s / b.calls for b in batches) * 1e6,
        "meter": "worker_cpu" if isinstance(plan.meter, CpuMeter) else "parent_wall",
    }
    name = key.removesuffix("_clock")  # wall, strict_wall
    result.timing[f"{name}_us"] = reading.per_call_us
    result.timing[name] = figures
    failure = judge(reading, reported, settings)
    if failure is not None and result.scenario.contract:
        withhold(result, key, failure)
        return None
    if failure is not None:
        result.checks[key] = f"failed: {failure.reason}"
        return failure
    meter = "; the worker's busiest thread's CPU time" if isinstance(plan.meter, CpuMeter) else ""
    result.checks[key] = (
        f"passed: the parent's clock saw {reading.per_call_us:.1f} us per call (best of "
        f"{reading.batches} batches of back-to-back calls, {reading.calls} calls{meter}; "
        f"{verifier.describe()}) <= {1 + settings.tolerance:g} x {reported:.1f} us reported "
        f"+ {bound - reported * (1 + settings.tolerance):.1f} us"
    )
    return None


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
