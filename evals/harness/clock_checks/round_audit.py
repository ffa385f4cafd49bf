"""The parent's clock on a candidate's whole timing round, against what the round reported.

On a CPU target the candidate is timed by a clock inside its own process, which a candidate
that took over its worker can slow down (``tests/cheats/cpu_attention/timer_forge.cpp``
rewrites libpython's ``clock_gettime``). The wall-clock check
(:mod:`evals.harness.clock_checks.wall_check`) bounds that from other calls, made later under other
load, so it must allow 2.5x. This audit reads the very calls whose figures count: the parent times
each candidate ``time`` request on its own clock, then, in the upstreams' worker (a process that
never loads the candidate), the same round with a kernel that does nothing (``{"null": true}``: the
same input sets from the same seeds, the same warm-up, trials and fresh queries, keeping and
digesting its outputs as the candidate's round does). What the candidate's round took beyond that is
its calls' time, which their own reports (busy seconds, warm-up included)
must explain:

    round - null <= (1 + tolerance) x reported + overhead_share x null + calls x margin

Both sides are wall time over the same calls, so load does not widen it (a call that waited
for a core reported the wait too); what differs is only the round's own work around the
calls, measured in another process at another moment, hence the share of the null round
allowed on top, with a margin per call. A forged clock cannot slow the parent's, and a
call's work is inside the round, since its inputs (a fresh q a call) are made there.

The round's answer also commits to a digest of each output it kept
(:mod:`evals.harness.clock_checks.timed_commit`): the work the parent later checks was done inside
the round this audit clocks, not when the outputs are fetched, which no clock covers.

The bound is on the round's busy seconds, not on the median that is scored: beside other
load an honest round's calls take 1.5-2x their median on average (the median leaves out the
calls that waited for a core, the round's time does not), so a worker that reports its
calls' true busy seconds beside a forged median is bounded by the wall-clock check alone.

A round over the bound is timed again on new seeds; where the last of them is still over it,
the candidate's figures are scaled up by the factor its reports fall short by, and where every
round tried reached ``fail_factor`` the scenario fails: scaling keeps a busy host's honest round
(one in 20 beside two other runs and a busy loop came out at 1.07) from failing a run, while a
forged clock keeps no more than the tolerance. The failure asks for every round, not the last:
a forge falls short on each round alike, while a round of a few milliseconds that loses a
scheduler slice to other load can fall short by more than 1.5x (an honest start.cpp round of
11 calls, 35 ms, at 1.57 with two test runs beside it on two cores).

(Since cpu_attention 19 the scored figure is the parent's own,
:mod:`evals.harness.clock_checks.parent_figure`: scaling moves only the reports the wall-clock
check holds to, and the failure still rejects a forge. Metering by the worker's CPU time instead
counted OpenMP threads spinning while the main thread waited for a core: honest kernels beside a
test suite came out at up to 3.3x.)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from evals.harness.clock_checks.wall_check import withhold
from evals.harness.failures import Code, Failure
from evals.harness.scenarios import Scenario
from evals.harness.verdict.audit_record import AUDIT, AuditSettings, RoundAudit
from evals.harness.verdict.record import ScenarioResult
from evals.harness.worker_link.session import Session, derive_seed
from evals.harness.worker_link.worker_client import WorkerFailure

__all__ = [
    "AUDIT",
    "AuditFailure",
    "AuditSettings",
    "RoundAudit",
    "audited_round",
    "conclude",
]


class AuditFailure(WorkerFailure):
    """The last round tried took far more time on the parent's clock than its reports explain."""


def audited_round(
    session: Session,
    scenario: Scenario,
    request: dict[str, Any],
    timeout_s: float,
    on_answer: Callable[[dict[str, Any]], None],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The candidate's timing round ``request``, audited on a CPU target (module).

    Returns the answer whose figures count and the request that made it: the first round
    its reports explain, or else the last of ``AUDIT.rounds`` (each after the first on its
    own seeds; the worker keeps the last round's outputs) with its candidate figures scaled
    up by its :attr:`RoundAudit.factor`. ``on_answer`` hears every answer (the tally). Each
    audit waits in ``session.audits`` for :func:`conclude`.

    Raises:
        AuditFailure: Every round's factor reached ``fail_factor`` on a scenario that is not
            a contract scenario (a contract scenario's speedups are withheld instead).
    """
    client = session.client
    audited = session.target.device == "cpu" and session.upstreams is not None
    if audited:  # its answer commits to its kept outputs (evals.harness.clock_checks.timed_commit)
        request = {**request, "commit": True}
    best = float("inf")
    for attempt in range(AUDIT.rounds if audited else 1):
        sent = request if attempt == 0 else _reseeded(request, attempt)
        if not audited:
            header, _ = client.request(sent, timeout_s=timeout_s)
            on_answer(header)
            return header, sent
        if client.proc is None or client.proc.poll() is not None:
            client.start()  # so that the clock covers the round alone
        start = time.perf_counter()
        header, _ = client.request(sent, timeout_s=timeout_s)
        wall_s = time.perf_counter() - start
        on_answer(header)
        audit = _audit(session, sent, header, wall_s, timeout_s)
        session.audits.setdefault(scenario.id, []).append(audit)
        if audit.factor <= 1.0:
            return header, sent
        best = min(best, audit.factor)
    if best >= AUDIT.fail_factor and not scenario.contract:
        raise AuditFailure(Failure(Code.TIMING_MISMATCH, audit.reason()))
    return _scaled(header, audit.factor), sent


def _scaled(header: dict[str, Any], factor: float) -> dict[str, Any]:
    """``header`` with the candidate's device and issue figures multiplied by ``factor``."""
    out = {**header, "audit_factor": factor}
    for key in ("stats", "issue"):
        figures = dict(header.get(key, {}))
        if "candidate" in figures:
            st = figures["candidate"]
            figures["candidate"] = {
                **st,
                **{k: st[k] * factor for k in ("median_us", "mad_us", "min_us", "max_us")},
            }
        out[key] = figures
    return out


def _reseeded(request: dict[str, Any], attempt: int) -> dict[str, Any]:
    """``request`` on new input seeds and a new order (no call repeats an earlier input)."""
    seeds = [derive_seed(seed, "audit", attempt) for seed in request["seeds"]]
    return {**request, "seeds": seeds, "rng_seed": derive_seed(request["rng_seed"], attempt)}


def _audit(
    session: Session,
    request: dict[str, Any],
    answer: dict[str, Any],
    wall_s: float,
    timeout_s: float,
) -> RoundAudit:
    """The round beside its null round, run while the candidate's worker is stopped."""
    # the candidate's process says how many trials it ran: more would lengthen the null round
    # it is held against, so never more than the request allowed
    trials = min(int(answer["trials"]), int(request["settings"]["max_trials"]))
    calls = trials + int(request["settings"]["warmup"]) * len(request["seeds"])
    busy_s = float(answer["busy_s"].get("candidate", 0.0))
    null_s = _null_round(session, request, trials, timeout_s + 4 * wall_s)
    return RoundAudit(wall_s, null_s, busy_s, calls)


def _null_round(session: Session, request: dict[str, Any], trials: int, timeout_s: float) -> float:
    """The parent's seconds for ``request``'s round with a kernel that does nothing.

    In the upstreams' worker, a process that never loads the candidate, with the candidate's
    worker stopped (SIGSTOP) meanwhile, so nothing of the candidate's runs beside it.
    """
    upstreams = session.upstreams
    assert upstreams is not None  # audited_round audits only where there is one
    fixed = {"min_trials": trials, "max_trials": trials, "time_cap_s": 1e9, "target_rse": 0.0}
    null = {**request, "candidate": False, "upstreams": [], "null": True}
    null["settings"] = {**request["settings"], **fixed}
    if upstreams.proc is None or upstreams.proc.poll() is not None:
        upstreams.start()
    with session.client.paused():
        start = time.perf_counter()
        try:
            upstreams.request(null, timeout_s=timeout_s)
        except WorkerFailure as exc:  # never the candidate's doing
            reason = f"the upstreams' worker failed in a null round: {exc.failure.reason}"
            raise WorkerFailure(Failure(Code.HARNESS_ERROR, reason)) from exc
        return time.perf_counter() - start


def conclude(session: Session, result: ScenarioResult) -> None:
    """Move the scenario's audits into its verdict, with a check line and any flag.

    A scaled round is flagged; a contract scenario whose every round reached the failing
    factor has its speedups withheld, as the wall-clock check does
    (:func:`evals.harness.clock_checks.wall_check.withhold`).
    """
    audits = session.audits.pop(result.scenario.id, [])
    if not audits:
        return
    records = [a.to_json() for a in audits]
    result.timing["round_audit"] = [*result.timing.get("round_audit", []), *records]
    last = audits[-1]
    if min(a.factor for a in audits) >= AUDIT.fail_factor:
        withhold(result, "round_audit", Failure(Code.TIMING_MISMATCH, last.reason()))
    elif last.factor > 1.0:
        note = f"candidate times scaled by {last.factor:.3f}: {last.reason()}"
        result.checks["round_audit"] = f"scaled: {note}"
        result.flags.append(note)
    else:
        result.checks["round_audit"] = (
            f"passed: {len(audits)} timing round(s) on the parent's clock; the last "
            f"{last.wall_s - last.null_s:.4f} s beyond the same round with no kernel, against "
            f"{last.busy_s:.4f} s reported (allowed: {last.bound_s:.4f} s)"
        )
