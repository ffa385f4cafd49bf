"""Judging a scenario's timing, after its verification and probe.

Device-time requests to the candidate's worker and the upstreams' own, a re-time when the
timing does not converge, random checks of timed outputs, the host-issue cap, the roofline
floor, and the strict re-run of suspicious speedups.
"""

from __future__ import annotations

import dataclasses
import random
import time
from typing import Any

from evals.harness import wall_check
from evals.harness.failures import Code, Failure
from evals.harness.gpu import release_cached_memory
from evals.harness.scenarios import Scenario
from evals.harness.session import (
    Progress,
    Session,
    check_against,
    derive_seed,
    note_peak,
    timing_seeds,
    unpack,
)
from evals.harness.timing import TimingSettings, TimingStats, call_seed
from evals.harness.verdict import ScenarioResult
from evals.harness.worker_client import WorkerFailure

SUSPICIOUS_SPEEDUP = 1.5
"""A speedup above this over the fastest upstream is re-judged under a strict protocol
(:func:`_strict_rerun`); over any upstream it is also flagged for a person."""
STRICT_CHECKS_PER_SET = 16
"""Timed outputs of each input set verified in the strict re-run (all kept, up to this)."""
TIMING_ATTEMPTS = 2
"""Timing requests per scenario: one more when the first does not converge."""
TIMED_CHECKS_PER_SET = 1
"""Timed outputs of each input set verified, chosen at random after the calls were made (a
call skipping work on a fraction f of timed calls escapes one scenario with (1 - f)^3 at
3 sets, and every scenario is checked; the strict re-run checks up to 16 per set)."""
HOST_ISSUE_CAP_US = 200.0
"""GPU: host issue time (median, microseconds) a candidate call may always take."""
HOST_ISSUE_UPSTREAM_FACTOR = 2.0
"""GPU: or up to this many times the slowest upstream's issue time on the scenario."""


def time_scenario(session: Session, scenario: Scenario, result: ScenarioResult) -> Failure | None:
    """Time the candidate; re-time once when the timing does not converge.

    Then the checks that need the candidate's figures alone: timed outputs, the parent's
    clock on batches of calls (:mod:`evals.harness.wall_check`) and the roofline floor. The
    upstreams are timed later, by :func:`time_upstreams`, once no process of the candidate
    is left to share the device with them.
    """
    for attempt in range(TIMING_ATTEMPTS):
        header, request = _time_request(session, scenario, result, attempt)
        if header["stop"] == "converged":
            break
    _record_timing(session, result, header, attempts=attempt + 1)
    failure = _check_timed(session, result, request, header.get("kept", []))
    return (
        failure
        or wall_check.check(session, scenario, result, seeds=request["seeds"])
        or _plausible(session, scenario, result)
    )


def time_upstreams(session: Session, result: ScenarioResult) -> Failure | None:
    """Time the upstreams on a scenario whose candidate passed, with the candidate's process gone.

    The candidate's worker is killed first (the next candidate request starts a fresh one):
    whatever it left behind, a queued kernel, a thread or a timer, dies with its process and
    its CUDA context, so nothing of the candidate's can share the device (or, on the CPU, the
    cores) with the upstreams while they are timed. The first round uses the seeds of the
    candidate's last round (same inputs); a round that does not converge is re-timed once on
    new ones. Then the checks that need both: the host-issue cap and, for a suspicious
    speedup, the strict re-run (in a fresh candidate process).
    """
    upstreams = [u.name for u in session.target.upstreams if u.name not in result.unsupported]
    if not upstreams or session.upstreams is None or "candidate" not in result.times:
        return None
    session.client.kill()
    t0 = time.monotonic()
    try:
        # the candidate's last round's seeds; then rounds numbered past the candidate's and
        # the strict re-run's (TIMING_ATTEMPTS), so no two rounds share inputs
        last = int(result.timing["attempts"]) - 1
        for attempt in (last, *range(TIMING_ATTEMPTS + 1, 2 * TIMING_ATTEMPTS)):
            request = _request(session, result.scenario, attempt)
            header = _upstream_request(session, result, request, upstreams)
            if header["stop"] == "converged":
                break
        _record_upstreams(session, result, header)
    finally:
        spent = time.monotonic() - t0
        result.seconds["time_upstreams"] = spent
        result.seconds["time"] = result.seconds.get("time", 0.0) + spent
    return _host_issue(session, result) or _strict_rerun(session, result.scenario, result)


def time_all_upstreams(
    session: Session,
    results: list[ScenarioResult],
    progress: Progress | None = None,
) -> None:
    """:func:`time_upstreams` on every scenario the candidate passed, in order.

    A failure (the upstreams' worker, or the strict re-run) becomes the scenario's; each
    scenario's progress line is given again, now with its speedups.
    """
    for i, result in enumerate(results):
        if not result.correct:
            continue
        try:
            failure = time_upstreams(session, result)
        except WorkerFailure as exc:
            failure = exc.failure
        finally:
            if session.target.device == "cuda":
                release_cached_memory()
        if failure is not None:
            result.failure, result.correct = failure, False
        if progress is not None:
            progress(i + 1, len(results), result)


def _strict_rerun(session: Session, scenario: Scenario, result: ScenarioResult) -> Failure | None:
    """A speedup over :data:`SUSPICIOUS_SPEEDUP` x the fastest upstream is re-judged strictly.

    In a fresh worker process, on new inputs, with every kept timed output verified (up to
    :data:`STRICT_CHECKS_PER_SET` per input set): a wrong output, or a candidate time slower
    than the first by more than the target's ``strict_tolerance`` (state built up in the
    first process that a fresh one lacks), fails the scenario; so do the fresh process's
    figures when the parent's clock on batches of calls says they are too small
    (``checks['strict_wall_clock']``).
    """
    fastest = result.fastest_upstream()
    speedup = result.speedup(fastest) if fastest else None
    if speedup is None or speedup <= SUSPICIOUS_SPEEDUP:
        return None
    first = result.times["candidate"].median_us
    session.client.kill()  # the next request starts a fresh worker
    header, request = _time_request(session, scenario, result, TIMING_ATTEMPTS)
    kept = header.get("kept", [])
    failure = _check_timed(session, result, request, kept, per_set=STRICT_CHECKS_PER_SET)
    if failure is not None:
        return failure
    fresh = TimingStats(**header["stats"]["candidate"])
    again = fresh.median_us
    if again > (1 + session.target.timing.strict_tolerance) * first:
        reason = (
            f"{speedup:.2f}x over {fastest}, but a fresh process timed the candidate at "
            f"{again:.1f} us instead of {first:.1f} us"
        )
        return Failure(Code.IMPLAUSIBLE, reason)
    issue = header.get("issue", {}).get("candidate")
    failure = wall_check.check(
        session,
        scenario,
        result,
        device=fresh,
        issue=TimingStats(**issue) if issue else None,
        key="strict_wall_clock",
        seeds=request["seeds"],
    )
    if failure is not None:
        return failure
    result.checks["strict_rerun"] = (
        f"passed: {speedup:.2f}x over {fastest} confirmed in a fresh process "
        f"({again:.1f} us vs {first:.1f} us, every kept timed output verified)"
    )
    return None


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
    """One timing round of the candidate in its worker (fresh seeds and order per attempt)."""
    request = _request(session, scenario, attempt)
    header, _ = session.client.request(
        {**request, "candidate": True, "upstreams": []}, timeout_s=_timeout(session)
    )
    _tally_answer(session, result, header)
    return header, request


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


def _record_timing(
    session: Session, result: ScenarioResult, header: dict[str, Any], *, attempts: int
) -> None:
    """The candidate's device times, latencies, issue times and how its timing went."""
    result.times, result.latency, result.issue = {}, {}, {}
    result.timing = {
        "trials": int(header["trials"]),
        "stop": header["stop"],
        "attempts": attempts,
        "converged": True,
        "polluted": {},
    }
    _add_figures(session, result, header, who="the candidate's timing", attempts=attempts)


def _record_upstreams(session: Session, result: ScenarioResult, header: dict[str, Any]) -> None:
    """Add the upstreams' figures to the candidate's, with notes for a reader."""
    _add_figures(session, result, header, who="the upstreams' timing", attempts=None)
    for name in result.times:
        speedup = result.speedup(name) if name != "candidate" else None
        if speedup is not None and speedup > SUSPICIOUS_SPEEDUP:
            result.flags.append(f"suspicious: {speedup:.2f}x over {name}; worth a look")


def _add_figures(
    session: Session,
    result: ScenarioResult,
    header: dict[str, Any],
    *,
    who: str,
    attempts: int | None,
) -> None:
    """Merge one worker's timing answer into the result: stats, convergence, discarded calls."""
    parts = ((result.times, "stats"), (result.latency, "latency"), (result.issue, "issue"))
    for into, key in parts:
        into.update({name: TimingStats(**st) for name, st in header.get(key, {}).items()})
    timing = result.timing
    timing["converged"] = timing["converged"] and header["stop"] == "converged"
    timing["worst_rse"] = max(st.rse for st in result.times.values())
    timing["polluted"] = {
        **timing["polluted"],
        **{k: v for k, v in header.get("polluted", {}).items() if v},
    }
    if session.target.device == "cuda":  # the CPU has no spin: device time is wall time
        timing["spin_us"] = {**timing.get("spin_us", {}), **header.get("spin_us", {})}
    _timing_flags(session, result, header, who=who, attempts=attempts)


def _timing_flags(
    session: Session,
    result: ScenarioResult,
    header: dict[str, Any],
    *,
    who: str,
    attempts: int | None,
) -> None:
    """Notes on one worker's timing: not converged, or calls discarded for host work."""
    if header["stop"] != "converged":
        worst = max(TimingStats(**st).rse for st in header["stats"].values())
        rounds = f" in {attempts} attempts" if attempts else ""
        result.flags.append(
            f"timing did not converge{rounds} ({who} stopped at {header['stop']}): "
            f"rse {worst:.2%} over the target {session.target.timing.target_rse:.2%}; "
            "its figures are less precise"
        )
    for name, n in header.get("polluted", {}).items():
        if n:
            result.flags.append(
                f"{n} timed call(s) of {name} discarded: host issue work outlasted the spin"
            )


def _host_issue(session: Session, result: ScenarioResult) -> Failure | None:
    """GPU: the candidate's host issue time must stay within the cap (no work on the host).

    Device time hides the host's issue work behind a spin, so work on the host must not be a
    way to compute: the cap is the larger of :data:`HOST_ISSUE_CAP_US` and
    :data:`HOST_ISSUE_UPSTREAM_FACTOR` times the slowest upstream's issue time.
    """
    cand = result.issue.get("candidate")
    if session.target.device != "cuda" or cand is None:
        return None
    ups = [st.median_us for name, st in result.issue.items() if name != "candidate"]
    cap = max(HOST_ISSUE_CAP_US, HOST_ISSUE_UPSTREAM_FACTOR * max(ups, default=0.0))
    if cand.median_us > cap:
        reason = (
            f"the call spent {cand.median_us:.0f} us on the host before returning (median), "
            f"over the cap of {cap:.0f} us: work on the host or a synchronising call"
        )
        return Failure(Code.HOST_WORK, reason)
    result.checks["host_issue"] = f"passed: {cand.median_us:.0f} us <= cap {cap:.0f} us"
    return None


def _check_timed(
    session: Session,
    result: ScenarioResult,
    request: dict[str, Any],
    kept: list[int],
    *,
    per_set: int = TIMED_CHECKS_PER_SET,
) -> Failure | None:
    """Timed outputs chosen at random after the calls were made must be right too.

    Up to ``per_set`` of each input set's timed calls, drawn from the trials
    the worker kept with a generator seeded from the run's secret seed; ``request`` is the
    time request, whose seeds rebuild each chosen call's inputs (with its fresh q).
    """
    t0 = time.monotonic()
    target, scenario = session.target, result.scenario
    n_sets = len(request["seeds"])
    rng = random.Random(derive_seed(session.seed, scenario.id, "timed-check", request["rng_seed"]))
    chosen = sorted(
        trial
        for i in range(n_sets)
        for trial in rng.sample(
            [t for t in kept if t % n_sets == i],
            min(per_set, sum(1 for t in kept if t % n_sets == i)),
        )
    )
    try:
        header, payload = session.client.request({"op": "timed_outputs", "trials": chosen})
        outputs = unpack(session, header["tensors"], payload)
        sets = target.make_timing_inputs(scenario, list(request["seeds"]))
        for trial, out in zip(chosen, outputs, strict=True):
            inputs = sets[trial % n_sets]
            if target.timing.fresh_queries:
                seed = call_seed(request["rng_seed"], trial, "candidate")
                target.refill_query(scenario, inputs, seed)
            failure = check_against(target, scenario, out, inputs)
            if failure is not None:
                reason = f"a timed call (trial {trial}, input set {trial % n_sets}) was wrong"
                return Failure(Code.STALE_RESULT, f"{reason}: {failure.reason}")
    finally:
        result.seconds["time_check"] = time.monotonic() - t0
        session.tally.reference_s += result.seconds["time_check"]
    fresh = " (a fresh q before every timed call)" if target.timing.fresh_queries else ""
    result.checks["timed_outputs"] = (
        f"passed: {len(chosen)} timed outputs chosen at random after the calls, up to "
        f"{per_set} of each of {n_sets} input sets{fresh}"
    )
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
