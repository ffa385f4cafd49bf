"""Judging a scenario's timing, after its verification and probe.

Device-time requests to the candidate's worker and the upstreams' own, a re-time when the
timing does not converge, random checks of timed outputs, the host-issue cap and the roofline
floor. The upstreams' phase, its re-times and the strict re-run of suspicious speedups use
these requests from :mod:`evals.harness.judging.judge_upstreams`.
"""

from __future__ import annotations

import dataclasses
import random
import time
from typing import Any

from evals.harness.clock_checks import parent_figure, round_audit, wall_check
from evals.harness.clock_checks.timed_commit import Commitment
from evals.harness.failures import Code, Failure
from evals.harness.judging.timing_record import record_timing, settled
from evals.harness.measurement.timing import TimingSettings, call_seed
from evals.harness.scenarios import Scenario
from evals.harness.verdict.record import ScenarioResult
from evals.harness.verification.sampled_check import check_sampled
from evals.harness.worker_link.session import (
    Session,
    derive_seed,
    note_peak,
    timing_seeds,
    unpack,
)
from evals.harness.worker_link.worker_client import WorkerFailure

SUSPICIOUS_SPEEDUP = 1.5
"""A speedup above this over the fastest upstream is re-judged under a strict protocol
(:func:`evals.harness.judging.judge_upstreams._strict_rerun`); over any upstream it is also flagged
for a person."""
STRICT_CHECKS_PER_SET = 16
"""Timed outputs of each input set verified in the strict re-run (all kept, up to this)."""
TIMING_ATTEMPTS = 2
"""Timing requests per scenario: one more when the first is not settled
(:func:`evals.harness.judging.timing_record.settled`)."""
TIMED_CHECKS_PER_SET = 1
"""Timed outputs of each input set verified, chosen at random after the calls were made (a
call skipping work on a fraction f of timed calls escapes one scenario with (1 - f)^3 at
3 sets, and every scenario is checked; the strict re-run checks up to 16 per set)."""


def time_scenario(session: Session, scenario: Scenario, result: ScenarioResult) -> Failure | None:
    """Time the candidate; re-time once when the timing is not settled (converged, or close).

    Then the checks that need the candidate's figures alone: timed outputs, the parent's
    clock on batches of calls (:mod:`evals.harness.clock_checks.wall_check`; on a CPU target its
    figure becomes the candidate's time: :mod:`evals.harness.clock_checks.parent_figure`) and the
    roofline floor. The upstreams are timed later, by :func:`time_upstreams`, once no process of the
    candidate is left to share the device with them.
    """
    for attempt in range(TIMING_ATTEMPTS):
        header, request = _time_request(session, scenario, result, attempt)
        if settled(header, session.target.timing):
            break
    record_timing(session, result, header, attempts=attempt + 1)
    round_audit.conclude(session, result)
    failure = _check_timed(session, result, request, header) or wall_check.check(
        session, scenario, result, seeds=request["seeds"]
    )
    if failure is not None:
        return failure
    parent_figure.adopt_candidate(session, result, seeds=request["seeds"])
    return _plausible(session, scenario, result)


def _request(session: Session, scenario: Scenario, attempt: int) -> dict[str, Any]:
    """The timing request of round ``attempt``: its seeds, settings and order, all derived."""
    return {
        "op": "time",
        "scenario": scenario.to_json(),
        "seeds": timing_seeds(session, scenario, attempt),
        "settings": dataclasses.asdict(
            _unpredictable(session.target.timing, session, scenario, attempt)
        ),
        "rng_seed": derive_seed(session.seed, scenario.id, "order", attempt),
    }


def _timeout(session: Session) -> float:
    target = session.target
    return target.limits.call_timeout_s + 2 * target.timing.time_cap_s


def _time_request(
    session: Session, scenario: Scenario, result: ScenarioResult, attempt: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One timing round of the candidate in its worker (fresh seeds and order per attempt).

    On a CPU target the round is audited on the parent's clock
    (:mod:`evals.harness.clock_checks.round_audit`), and a round that fails is timed again on new
    seeds: the request returned is the one whose answer counts.
    """
    request = {**_request(session, scenario, attempt), "candidate": True, "upstreams": []}
    return round_audit.audited_round(
        session,
        scenario,
        request,
        _timeout(session),
        on_answer=lambda header: _tally_answer(session, result, header),
    )


def _upstream_request(
    session: Session, result: ScenarioResult, request: dict[str, Any], upstreams: list[str]
) -> dict[str, Any]:
    """One timing round of ``upstreams`` in their worker, from the seeds of ``request``.

    Their worker is a process that never loads the candidate.
    """
    assert session.upstreams is not None
    try:
        header, _ = session.upstreams.request(
            {**request, "candidate": False, "upstreams": upstreams}, timeout_s=_timeout(session)
        )
    except WorkerFailure as exc:  # never the candidate's doing
        reason = f"the upstreams' worker failed: {exc.failure.reason}"
        raise WorkerFailure(Failure(Code.HARNESS_ERROR, reason)) from exc
    _tally_answer(session, result, header)
    return header


def _unpredictable(
    settings: TimingSettings, session: Session, scenario: Scenario, attempt: int
) -> TimingSettings:
    """The settings with a minimum trial count drawn from the secret seed.

    Between ``min_trials`` and twice that: the worker cannot tell when the loop will stop.
    """
    rng = random.Random(derive_seed(session.seed, scenario.id, "min-trials", attempt))
    low = settings.min_trials
    return dataclasses.replace(settings, min_trials=rng.randint(low, 2 * low))


def _tally_answer(session: Session, result: ScenarioResult, answer: dict[str, Any]) -> None:
    """Count one timing answer's seconds, memory and unsupported upstreams."""
    note_peak(result, "worker", answer.get("peak_reserved_bytes"))
    result.unsupported.update(answer.get("unsupported", {}))
    for name, busy in answer["busy_s"].items():
        if name == "candidate":
            session.tally.candidate_s += busy
        else:
            session.tally.upstream_s += busy
    for part, key in (("time_loop", "loop_s"), ("time_worker", "worker_s")):
        result.seconds[part] = result.seconds.get(part, 0.0) + float(answer.get(key, 0.0))


def _check_timed(
    session: Session,
    result: ScenarioResult,
    request: dict[str, Any],
    answer: dict[str, Any],
    *,
    per_set: int = TIMED_CHECKS_PER_SET,
) -> Failure | None:
    """Timed outputs chosen at random after the calls were made must be right too.

    Up to ``per_set`` of each input set's timed calls, drawn from the trials the worker kept
    (``answer``, the round's) with a generator seeded from the run's secret seed; ``request``
    is the time request, whose seeds rebuild each chosen call's inputs (with its fresh q). An
    audited round's outputs must also be the ones it committed to
    (:mod:`evals.harness.clock_checks.timed_commit`).
    """
    t0 = time.monotonic()
    commitment: Commitment | None = None
    if request.get("commit"):
        read = Commitment.read(request, answer)
        if isinstance(read, Failure):
            return read
        commitment = read
    kept = sorted(commitment.digests) if commitment else answer.get("kept", [])
    n_sets = len(request["seeds"])
    rng = random.Random(
        derive_seed(session.seed, result.scenario.id, "timed-check", request["rng_seed"])
    )
    chosen = sorted(
        trial
        for i in range(n_sets)
        for trial in rng.sample(
            [t for t in kept if t % n_sets == i],
            min(per_set, sum(1 for t in kept if t % n_sets == i)),
        )
    )
    try:
        failure = _check_chosen(session, result, request, chosen, commitment)
    finally:
        result.seconds["time_check"] = time.monotonic() - t0
        session.tally.reference_s += result.seconds["time_check"]
    if failure is not None:
        return failure
    fresh = " (a fresh q before every timed call)" if session.target.timing.fresh_queries else ""
    committed = ", each the output its round committed to" if commitment else ""
    result.checks["timed_outputs"] = (
        f"passed: {len(chosen)} timed outputs chosen at random after the calls, up to "
        f"{per_set} of each of {n_sets} input sets{fresh}{committed}"
    )
    return None


def _check_chosen(
    session: Session,
    result: ScenarioResult,
    request: dict[str, Any],
    chosen: list[int],
    commitment: Commitment | None,
) -> Failure | None:
    """Fetch the ``chosen`` trials' outputs and check each (its commitment, then accuracy)."""
    target, scenario = session.target, result.scenario
    n_sets = len(request["seeds"])
    header, payload = session.client.request({"op": "timed_outputs", "trials": chosen})
    outputs = unpack(session, header["tensors"], payload)
    sets = target.make_timing_inputs(scenario, list(request["seeds"]))
    for trial, out in zip(chosen, outputs, strict=True):
        if commitment is not None:
            failure = commitment.covers(out) or commitment.holds(trial, out)
            if failure is not None:
                return failure
        inputs = sets[trial % n_sets]
        if target.timing.fresh_queries:
            seed = call_seed(request["rng_seed"], trial, "candidate")
            target.refill_query(scenario, inputs, seed)
        block_seed = derive_seed(session.seed, scenario.id, "timed-block", trial)
        (failure,) = check_sampled(target, scenario, [out], inputs, seed=block_seed)
        if failure is not None:
            reason = f"a timed call (trial {trial}, input set {trial % n_sets}) was wrong"
            return Failure(Code.STALE_RESULT, f"{reason}: {failure.reason}")
    return None


def _plausible(session: Session, scenario: Scenario, result: ScenarioResult) -> Failure | None:
    """Reject a candidate time below the roofline floor (FLOPs/peak, bytes/bandwidth)."""
    if session.ceilings is None:
        return None
    floor = session.target.floor_us(scenario, session.ceilings)
    cand = result.times.get("candidate")
    if floor is None or cand is None:
        return None
    result.floor_us = floor
    if cand.median_us < floor:
        reason = (
            f"candidate median {cand.median_us:.1f} us is below the roofline floor "
            f"{floor:.1f} us: implausible"
        )
        return Failure(Code.IMPLAUSIBLE, reason)
    result.checks["roofline"] = f"passed: median {cand.median_us:.1f} us >= floor {floor:.1f} us"
    return None
