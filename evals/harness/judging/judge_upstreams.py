"""Timing the upstreams once the candidate's process is gone, and re-timing outliers.

The upstreams are timed scenario by scenario after every candidate figure is in (no process
of the candidate alive); a disturbed upstream round is timed again, a speedup far above the
candidate's median is re-timed side by side, and a suspicious one is re-judged strictly
(:mod:`evals.harness.judging.retime` says when, and what a re-time may change).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

from evals.harness.clock_checks import null_recheck, parent_figure, round_audit, wall_check
from evals.harness.failures import Code, Failure
from evals.harness.judging import host_issue, judge_time, retime
from evals.harness.judging.timing_record import add_figures, flag_suspicious, settled
from evals.harness.measurement.gpu import release_cached_memory
from evals.harness.measurement.timing import MAX_STRICT_ROUNDS, TimingStats
from evals.harness.sandbox.process_tree import outlived, reap_strays
from evals.harness.scenarios import Scenario
from evals.harness.verdict.record import ScenarioResult, geomean
from evals.harness.worker_link.session import Progress, Session
from evals.harness.worker_link.worker_client import WorkerFailure

STRICT_ROUNDS = tuple(judge_time.TIMING_ATTEMPTS + k for k in (0, 4, 6, 7))
"""Timing rounds (their seeds) of the strict re-run's side-by-side rounds, one after another
until one clears the candidate; a target takes the first ``timing.strict_rounds`` of them.
State that only the first process had slows every fresh process alike, while load lands on
the candidate's side alone by chance (a kernel that splits a tiny call over threads spins
while a partner waits for a core). Rounds 0 and 1 are the candidate's first; every round
number has inputs of its own."""
assert len(STRICT_ROUNDS) == MAX_STRICT_ROUNDS
UPSTREAM_RETIME_ROUND = judge_time.TIMING_ATTEMPTS + 1
"""The upstreams' re-time of a round that did not converge."""
SPREAD_ROUND = judge_time.TIMING_ATTEMPTS + 2
"""The upstreams' re-time of a disturbed round."""
PATTERN_ROUND = judge_time.TIMING_ATTEMPTS + 3
"""The side-by-side re-time of a speedup far above the candidate's median."""
HOST_ISSUE_ROUND = judge_time.TIMING_ATTEMPTS + 5
"""The side-by-side round of a candidate over the host-issue cap."""


def time_upstreams(session: Session, result: ScenarioResult) -> Failure | None:
    """Time the upstreams on a scenario whose candidate passed, with the candidate's process gone.

    The candidate's worker is killed first (the next candidate request starts a fresh one):
    whatever it left behind, a queued kernel, a thread or a timer, dies with its process and
    its CUDA context, so nothing of the candidate's can share the device (or, on the CPU, the
    cores) with the upstreams while they are timed. The first round uses the seeds of the
    candidate's last round (same inputs); a round not settled (converged, or close:
    :func:`evals.harness.judging.timing_record.settled`) is re-timed once on new ones, and a
    disturbed one (:func:`evals.harness.judging.retime.disturbed`) once more, each upstream keeping
    its lower median. Then the gated wall-clock checks judged again against null batches
    timed now (:mod:`evals.harness.clock_checks.null_recheck`), and the checks that need both:
    the host-issue cap and, for a suspicious speedup, the strict re-run (side by side, in a
    fresh candidate process).
    """
    upstreams = _upstream_names(session, result)
    if not upstreams or session.upstreams is None or "candidate" not in result.times:
        return None
    session.client.kill()
    ups = session.upstreams.proc
    left = outlived("the candidate's worker", reap_strays({ups.pid} if ups else ()))
    if left is not None:  # nothing of the candidate's runs beside the upstreams' timing
        return left
    t0 = time.monotonic()
    try:
        # the candidate's last round's seeds; then a round numbered past the candidate's and
        # the strict re-run's, so no two rounds share inputs
        last = int(result.timing["attempts"]) - 1
        for attempt in (last, UPSTREAM_RETIME_ROUND):
            request = judge_time._request(session, result.scenario, attempt)
            header = judge_time._upstream_request(session, result, request, upstreams)
            if settled(header, session.target.timing):
                break
        add_figures(session, result, header, who="the upstreams' timing", attempts=None)
        _retime_disturbed(session, result, upstreams)
        parent_figure.measure_upstreams(session, result, upstreams)
    finally:
        _spent(result, t0)
    # the gated checks' null batches again, with no process of the candidate's alive
    failure = null_recheck.recheck(session, result)
    failure = (
        failure or _host_issue(session, result) or _strict_rerun(session, result.scenario, result)
    )
    round_audit.conclude(session, result)  # the strict re-run's rounds' audits
    return failure


def time_all_upstreams(
    session: Session,
    results: list[ScenarioResult],
    progress: Progress | None = None,
) -> None:
    """:func:`time_upstreams` on every scenario the candidate passed, in order; then outliers.

    A failure (the upstreams' worker, or the strict re-run) becomes the scenario's. Once every
    scenario has its speedups, those far above the candidate's median are re-timed side by
    side (:func:`_recheck_pattern`). Each scenario's progress line is given again, now with
    its speedups (a re-checked one once more).
    """
    for i, result in enumerate(results):
        if result.correct:
            _settle(session, result, functools.partial(time_upstreams, session, result))
            if progress is not None:
                progress(i + 1, len(results), result)
    for i in _recheck_pattern(session, results):
        round_audit.conclude(session, results[i])  # its side-by-side rounds' audits
        if progress is not None:
            progress(i + 1, len(results), results[i])
    for result in results:
        if result.correct:
            flag_suspicious(result, threshold=judge_time.SUSPICIOUS_SPEEDUP)


def _settle(session: Session, result: ScenarioResult, step: Callable[[], Failure | None]) -> None:
    """Run ``step`` on ``result``; its failure (or a worker's) becomes the scenario's."""
    try:
        failure = step()
    except WorkerFailure as exc:
        failure = exc.failure
    finally:
        if session.target.device == "cuda":
            release_cached_memory()
    if failure is not None:
        result.failure, result.correct = failure, False


def _upstream_names(session: Session, result: ScenarioResult) -> list[str]:
    return [u.name for u in session.target.upstreams if u.name not in result.unsupported]


def _spent(result: ScenarioResult, t0: float) -> None:
    """Count the seconds since ``t0`` as upstream timing (part of the scenario's ``time``)."""
    spent = time.monotonic() - t0
    result.seconds["time_upstreams"] = result.seconds.get("time_upstreams", 0.0) + spent
    result.seconds["time"] = result.seconds.get("time", 0.0) + spent


def _retime_disturbed(session: Session, result: ScenarioResult, upstreams: list[str]) -> None:
    """An upstream round far slower than its own fastest call is timed again; the lower counts."""
    names = retime.disturbed({n: result.times[n] for n in upstreams if n in result.times})
    if not names:
        return
    before = {n: result.times[n].median_us for n in names}
    request = judge_time._request(session, result.scenario, SPREAD_ROUND)
    header = judge_time._upstream_request(session, result, request, names)
    again = {n: TimingStats(**st) for n, st in header["stats"].items()}
    retime.keep_lower(result.times, again, names)
    after = {n: again[n].median_us for n in names if n in again}
    retime.record(result, retime.Retime("upstream spread", "upstreams", before, after, "lower"))


def _host_issue(session: Session, result: ScenarioResult) -> Failure | None:
    """The host-issue cap; a candidate over it is judged again side by side before it fails.

    The candidate's issue time and the upstreams' come from rounds at different moments, and
    host load (agents building beside the run) inflates issue work: FA3 judged against itself
    beside four building agents issued at 577 us against its own 191 us as an upstream. So
    the cap decides on a side-by-side round (the candidate in a fresh process, then the
    upstreams on the same inputs, :func:`_side_by_side`), held to the same checks as the
    first; work on the host stays over it there too. Where it holds there, of the first and the
    side-by-side figures the lower speedup counts.
    """
    first = host_issue.check(session, result)
    if first is None:
        return None
    side, failure = _side_by_side(
        session,
        result,
        HOST_ISSUE_ROUND,
        per_set=judge_time.TIMED_CHECKS_PER_SET,
        wall_key="host_issue_wall_clock",
    )
    if side is None:
        return failure
    issue = {
        name: TimingStats(**st)
        for header in side.headers
        for name, st in header.get("issue", {}).items()
    }
    failure = host_issue.check(session, result, issue)
    if failure is not None:
        return failure
    result.checks["host_issue"] += f" (side by side; first {first.reason})"
    result.flags.append(f"host issue judged side by side: first {first.reason}")
    # the first round's figures may owe their speed to the host work the cap exists for (a
    # kernel that behaves in a fresh process only): the lower speedup counts
    return _count_lower(session, result, side, why="host issue")[1]


def _side_by_side(
    session: Session, result: ScenarioResult, attempt: int, *, per_set: int, wall_key: str
) -> tuple[retime.Side | None, Failure | None]:
    """The candidate in a fresh process, then (it killed) the upstreams on the same inputs.

    The candidate's round is held to the same checks as its first: timed outputs (up to
    ``per_set`` per input set) and the parent's clock (``checks[wall_key]``).
    """
    session.client.kill()  # the next request starts a fresh worker
    header, request, failure = _candidate_round(
        session, result, attempt, per_set=per_set, wall_key=wall_key
    )
    if failure is not None:
        return None, failure
    session.client.kill()  # never both alive: the upstreams right after, on the same inputs
    failure = null_recheck.recheck(session, result)  # its gated check, the candidate gone
    if failure is not None:
        return None, failure
    t0 = time.monotonic()
    try:
        up = judge_time._upstream_request(
            session, result, request, _upstream_names(session, result)
        )
        up = parent_figure.upstream_header(session, result, up, seeds=request["seeds"])
    finally:
        _spent(result, t0)
    times = {name: TimingStats(**st) for name, st in (header["stats"] | up["stats"]).items()}
    return retime.Side(times, [header, up]), None


def _candidate_round(
    session: Session, result: ScenarioResult, attempt: int, *, per_set: int, wall_key: str
) -> tuple[dict[str, Any], dict[str, Any], Failure | None]:
    """One checked timing round of the candidate: its answer, its request and any failure."""
    scenario = result.scenario
    header, request = judge_time._time_request(session, scenario, result, attempt)
    failure = judge_time._check_timed(session, result, request, header, per_set=per_set)
    if failure is None:
        issue = header.get("issue", {}).get("candidate")
        failure = wall_check.check(
            session,
            scenario,
            result,
            device=TimingStats(**header["stats"]["candidate"]),
            issue=TimingStats(**issue) if issue else None,
            key=wall_key,
            seeds=request["seeds"],
        )
    if failure is None:
        header = parent_figure.candidate_header(session, result, header, wall_key=wall_key)
    return header, request, failure


def _count_lower(
    session: Session, result: ScenarioResult, side: retime.Side, *, why: str
) -> tuple[str, Failure | None]:
    """Count whichever of the first and the side-by-side figures gives the lower speedup.

    Over several upstreams, the geomean of the speedups over those in both. Returns which
    counts (``first`` or ``re-time``) and the roofline's verdict on a re-timed candidate.
    """
    names = [n for n in side.times if n != "candidate" and n in result.times]
    first = geomean(s for n in names if (s := result.speedup(n)) is not None) or 0.0
    again = geomean(s for n in names if (s := retime.speedup_of(side.times, n)) is not None)
    counted = "re-time" if again is not None and again < first else "first"
    before = {n: result.times[n].median_us for n in side.times if n in result.times}
    after = {n: st.median_us for n, st in side.times.items()}
    retime.record(result, retime.Retime(why, "both", before, after, counted))
    if counted == "first":
        return counted, None
    for header in side.headers:
        add_figures(session, result, header, who=f"the {why} re-time", attempts=None)
    return counted, judge_time._plausible(session, result.scenario, result)


def _recheck_pattern(session: Session, results: list[ScenarioResult]) -> list[int]:
    """Scenarios whose speedup is far above the candidate's median, re-timed side by side.

    One fresh candidate process times them all (each round checked as its first was), is
    killed, then the upstreams time the same inputs: the lower speedup counts. Returns the
    indices re-checked. Scenarios the strict re-run already re-timed side by side are left.
    """
    names = [u.name for u in session.target.upstreams]
    flagged = [
        i
        for i in retime.pattern_outliers(results, names)
        if "strict_rerun" not in results[i].checks
    ]
    if not flagged or session.upstreams is None:
        return []
    session.client.kill()
    rounds: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
    for i in flagged:
        step = functools.partial(_pattern_candidate, session, results[i], rounds, i)
        _settle(session, results[i], step)
    session.client.kill()  # never both alive
    for i, (header, request) in rounds.items():
        step = functools.partial(_pattern_upstreams, session, results[i], header, request)
        _settle(session, results[i], step)
    return flagged


def _pattern_candidate(
    session: Session,
    result: ScenarioResult,
    rounds: dict[int, tuple[dict[str, Any], dict[str, Any]]],
    index: int,
) -> Failure | None:
    """The candidate's side of a pattern re-time, kept in ``rounds`` under ``index``."""
    header, request, failure = _candidate_round(
        session,
        result,
        PATTERN_ROUND,
        per_set=judge_time.TIMED_CHECKS_PER_SET,
        wall_key="retime_wall_clock",
    )
    if failure is None:
        rounds[index] = (header, request)
    return failure


def _pattern_upstreams(
    session: Session, result: ScenarioResult, header: dict[str, Any], request: dict[str, Any]
) -> Failure | None:
    t0 = time.monotonic()
    try:
        up = judge_time._upstream_request(
            session, result, request, _upstream_names(session, result)
        )
        up = parent_figure.upstream_header(session, result, up, seeds=request["seeds"])
    finally:
        _spent(result, t0)
    times = {name: TimingStats(**st) for name, st in (header["stats"] | up["stats"]).items()}
    return _count_lower(session, result, retime.Side(times, [header, up]), why="speedup pattern")[1]


def _strict_rerun(session: Session, scenario: Scenario, result: ScenarioResult) -> Failure | None:
    """A speedup over :data:`SUSPICIOUS_SPEEDUP` x the fastest upstream is re-judged strictly.

    Side by side, up to the target's ``timing.strict_rounds`` times: the candidate in a
    fresh worker process on new inputs, with every kept timed output verified (up to
    :data:`STRICT_CHECKS_PER_SET` per input set) and its figures held to the parent's clock
    (``checks['strict_wall_clock']``), then, that process killed, the upstreams on the same
    inputs. A wrong output or a wall-clock mismatch fails the scenario. The candidate's time
    may not grow by more than the target's ``strict_tolerance`` beyond what the machine's
    own slow-down explains (the upstream's figure in the same round over its best on this
    scenario; :func:`evals.harness.judging.retime.slowed_alone`): state built up in the first
    process that a fresh one lacks; only when it did so in every round is the scenario
    rejected. Of the first figures and the confirming round's, the lower speedup counts.
    """
    fastest = result.fastest_upstream()
    speedup = result.speedup(fastest) if fastest else None
    if fastest is None or speedup is None or speedup <= judge_time.SUSPICIOUS_SPEEDUP:
        return None
    first = result.times["candidate"].median_us
    best = result.times[fastest].median_us
    tolerance = session.target.timing.strict_tolerance
    rounds = STRICT_ROUNDS[: session.target.timing.strict_rounds]
    slowed: list[tuple[float, float, float]] = []  # (candidate, upstream, its best) per round
    for attempt in rounds:
        side, failure = _side_by_side(
            session,
            result,
            attempt,
            per_set=judge_time.STRICT_CHECKS_PER_SET,
            wall_key="strict_wall_clock",
        )
        if side is None:
            return failure
        again = side.times["candidate"].median_us
        up = side.times[fastest].median_us if fastest in side.times else best
        before = {"candidate": first, fastest: best}
        best = min(best, up)
        alone = retime.slowed_alone(
            first_us=first,
            again_us=again,
            upstream_us=up,
            upstream_best_us=best,
            tolerance=tolerance,
        )
        if not alone:
            counted, failure = _count_lower(session, result, side, why="strict re-run")
            result.checks["strict_rerun"] = (
                f"passed: {speedup:.2f}x over {fastest} re-timed side by side in a fresh "
                f"process (candidate {again:.1f} us vs {first:.1f} us first; {fastest} "
                f"{up:.1f} us, best {best:.1f} us; every kept timed output verified); "
                f"counted: {counted}"
            )
            return failure
        result.timing.setdefault("retimes", []).append(
            retime.Retime(
                "strict re-run",
                "both",
                before,
                {"candidate": again, fastest: up},
                "none: the candidate slowed alone",
            ).to_json()
        )
        slowed.append((again, up, best))
    return _slowed_alone_failure(speedup, fastest, first, slowed)


def _slowed_alone_failure(
    speedup: float, fastest: str, first: float, slowed: list[tuple[float, float, float]]
) -> Failure:
    """The strict re-run's rejection, quoting the round nearest to clearing the candidate.

    ``slowed``: each round's (candidate, upstream, upstream's best) figures, microseconds.
    """
    again, up, best = min(
        slowed,
        key=lambda r: retime.slow_down(
            first_us=first, again_us=r[0], upstream_us=r[1], upstream_best_us=r[2]
        ),
    )
    reason = (
        f"{speedup:.2f}x over {fastest}, but in each of {len(slowed)} side-by-side rounds a "
        f"fresh process timed the candidate slower than the machine's own slow-down explains; "
        f"at best {again:.1f} us instead of {first:.1f} us while {fastest}, timed right after, "
        f"took {up:.1f} us (best {best:.1f} us): the candidate slowed alone"
    )
    return Failure(Code.IMPLAUSIBLE, reason)
