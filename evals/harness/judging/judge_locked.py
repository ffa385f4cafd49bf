"""Judging a built candidate under its device's lock: the workers, the holds, the passes.

The workers start and warm up first (:mod:`evals.harness.judging.warm_start`). A GPU target then
checks under the lock shared with other runs' checks and measures holding it alone; a CPU target
judges everything under the lock it took before its build. Around every hold the parent asks the
kernel whether the candidate's process holds a lock on the lock folder's files
(:mod:`evals.harness.sandbox.lock_tamper`): one that does fails the run, rather than making it and
every other run on the device wait until they fail as busy.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

from evals.harness.failures import Failure, HarnessInputError
from evals.harness.judging.judge import Session, Tally
from evals.harness.judging.judge_suite import (
    SHARED_MEMORY_SHARE,
    check_scenarios,
    judge_scenarios,
    measure_scenarios,
)
from evals.harness.judging.warm_start import StartFailure, start_workers
from evals.harness.measurement.device_lock import LockRecord, device_lock, lock_dir
from evals.harness.run_settings import RunSettings
from evals.harness.sandbox.lock_tamper import tamper_failure
from evals.harness.scenarios import Scenario
from evals.harness.targets import Target
from evals.harness.tracing import trace
from evals.harness.verdict.record import ScenarioResult, Verdict
from evals.harness.worker_link.budget import Budget
from evals.harness.worker_link.session import Progress
from evals.harness.worker_link.worker_client import WorkerClient, WorkerFailure

__all__ = ["Notify", "fail_all", "judge_locked", "run_lock"]

Notify = Callable[[str], None]


def fail_all(verdict: Verdict, scenarios: tuple[Scenario, ...], failure: Failure) -> None:
    """The run fails with ``failure``, and every scenario with it."""
    verdict.failure = failure
    verdict.results = [ScenarioResult(s, failure=failure) for s in scenarios]


def run_lock(
    target: Target,
    settings: RunSettings,
    notify: Notify | None,
    *,
    shared: bool = False,
    client: WorkerClient | None = None,
) -> contextlib.AbstractContextManager[LockRecord]:
    """This run's hold on its device's lock, described for whoever has to wait on it.

    ``client``: the candidate's worker, whose locks on the lock folder end the wait.
    """
    what = f"{settings.command} {target.name} {settings.kernel or settings.candidate_upstream}"
    return device_lock(
        target.device_key(),
        what=what,
        timeout_s=settings.lock_timeout_s,
        notify=notify,
        shared=shared,
        guard=None if client is None else (lambda: _tampering(client)),
    )


def _tampering(client: WorkerClient) -> Failure | None:
    """``sandbox_violation`` if the candidate's live worker holds a lock in the lock folder."""
    proc = client.proc
    if proc is None or proc.poll() is not None:
        return None
    return tamper_failure(proc.pid, lock_dir())


def _untampered(client: WorkerClient) -> None:
    """Raise the worker's locks on the lock folder as the candidate's failure, if it holds any."""
    failure = _tampering(client)
    if failure is not None:
        raise HarnessInputError(failure)


def judge_locked(
    verdict: Verdict,
    target: Target,
    library: Path | None,
    scenarios: tuple[Scenario, ...],
    tally: Tally,
    listeners: tuple[Progress | None, Notify | None],
    settings: RunSettings,
    held: LockRecord | None,
    *,
    budget: Budget | None = None,
) -> list[str]:
    """Start the workers, then judge every scenario holding the device's lock.

    Returns the files the candidate's worker left in its private folder (removed with it).

    The workers start and warm up first: on a GPU target before the lock is taken, since
    nothing of it measures. ``held``: the lock this run took before its build (a CPU target's),
    kept rather than taken again: a second ``flock`` from another descriptor of this process
    would wait on itself.
    """
    progress, notify = listeners
    clients = _workers(target, library, settings)
    try:
        tally.start_s = start_workers(target, clients, scenarios, verdict.seed or 0)
    except StartFailure as exc:
        _protections(verdict, clients[0])
        fail_all(verdict, scenarios, exc.failure)
        return clients[0].left_behind
    _protections(verdict, clients[0])
    session = _session(verdict, target, library, settings, clients, tally)
    session.budget = session.client.budget = budget  # the candidate's worker alone
    try:
        _untampered(session.client)  # its library's initialisers have run
        if _two_passes(target, held):
            _judge_two_passes(verdict, session, scenarios, listeners, settings)
        else:
            lock = (
                run_lock(target, settings, notify, client=session.client)
                if held is None
                else contextlib.nullcontext(held)
            )
            with lock as record:
                verdict.lock = record
                _judge_all(verdict, session, scenarios, progress, settings)
                _untampered(session.client)
    except HarnessInputError as exc:
        fail_all(verdict, scenarios, exc.failure)
    finally:
        tally.requests_s = sum(c.request_s for c in clients)
        tally.worker_s = sum(c.worker_s for c in clients)
        for c in clients:
            c.close()
    return clients[0].left_behind


def _fresh_worker(client: WorkerClient) -> None:
    """Start the candidate's worker afresh outside the lock (its library loaded, nothing called).

    A failure here recurs in the next request, which starts it again and reports it.
    """
    with contextlib.suppress(WorkerFailure):
        client.start()


def _two_passes(target: Target, held: LockRecord | None) -> bool:
    """Whether checks share the device before measuring: a GPU's (the CPU's lock is held)."""
    return held is None and target.device == "cuda"


def _session(
    verdict: Verdict,
    target: Target,
    library: Path | None,
    settings: RunSettings,
    clients: list[WorkerClient],
    tally: Tally,
) -> Session:
    """The judging session over the started ``clients`` (its ceilings are measured later)."""
    assert verdict.seed is not None
    session = Session(target, clients[0], verdict.seed, verdict.command, None, tally)
    session.upstreams = clients[1] if len(clients) > 1 else None
    session.own_kernels = _trace_setup(verdict, target, library, settings)
    return session


def _ceilings(verdict: Verdict, session: Session) -> None:
    """Measure the device's ceilings (they time: under the lock exclusive) into the session."""
    t0 = time.monotonic()
    ceilings = session.target.measure_ceilings() if verdict.command != "check" else None
    ceil_json = dataclasses.asdict(ceilings) if ceilings else None
    verdict.provenance = {**verdict.provenance, "ceilings": ceil_json}
    session.ceilings = ceilings
    session.tally.setup_s += time.monotonic() - t0


def _judge_all(
    verdict: Verdict,
    session: Session,
    scenarios: tuple[Scenario, ...],
    progress: Progress | None,
    settings: RunSettings,
) -> None:
    """Measure the ceilings and judge every scenario, holding the device's lock."""
    _ceilings(verdict, session)
    judge_scenarios(verdict, session, scenarios, progress, keep_going=settings.keep_going)


def _judge_two_passes(
    verdict: Verdict,
    session: Session,
    scenarios: tuple[Scenario, ...],
    listeners: tuple[Progress | None, Notify | None],
    settings: RunSettings,
) -> None:
    """GPU: check under the lock shared with other runs' checks, then measure holding it alone.

    Verification and the probes time nothing, so several runs' checks share the GPU; timing,
    the ceilings, the trace and the upstreams need it to themselves
    (:mod:`evals.harness.judging.judge_suite`).
    """
    progress, notify = listeners
    device = verdict.provenance.get("device")
    memory = float(device.get("memory_bytes") or 0) if isinstance(device, dict) else 0.0
    client = session.client
    with run_lock(session.target, settings, notify, shared=True, client=client) as record:
        verdict.check_lock = record
        pending = check_scenarios(
            verdict,
            session,
            scenarios,
            progress,
            keep_going=settings.keep_going,
            shared_bytes=memory / SHARED_MEMORY_SHARE,
        )
        tampered = _tampering(client)
        # before another run may measure: whatever the candidate's calls left running on the
        # GPU dies with its process (it would slow that run, or deflate this run's ceilings)
        client.kill()
    if tampered is not None:
        raise HarnessInputError(tampered)
    _fresh_worker(client)
    with run_lock(session.target, settings, notify, client=client) as record:
        verdict.lock = record
        _ceilings(verdict, session)
        measure_scenarios(verdict, session, pending, progress, keep_going=settings.keep_going)
        _untampered(client)


def _protections(verdict: Verdict, client: WorkerClient) -> None:
    """Record what protected the candidate's worker; flag a candidate run outside the sandbox."""
    verdict.protections = client.protections
    seccomp = str((client.protections or {}).get("seccomp", ""))
    if client.protections and client.library is not None and not seccomp.startswith("active"):
        verdict.flags.append(f"the candidate ran without the OS sandbox (seccomp {seccomp})")


def _workers(target: Target, library: Path | None, settings: RunSettings) -> list[WorkerClient]:
    """The candidate's worker and, where timing runs, the upstreams' own worker."""
    clean = settings.command == "score"
    keep = settings.keep_worker_log
    workers = [
        WorkerClient(
            target,
            library,
            keep,
            candidate_upstream=settings.candidate_upstream,
            clean_env=clean,
            gated=target.timing.gated_wall,
        )
    ]
    if settings.command != "check" and target.upstreams:
        ups_log = keep.with_name(f"{keep.stem}.upstreams{keep.suffix}") if keep else None
        gated = target.timing.gated_wall  # its gate times the null batches (null_batches.py)
        workers.append(WorkerClient(target, None, ups_log, clean_env=clean, gated=gated))
    return workers


def _trace_setup(
    verdict: Verdict, target: Target, library: Path | None, settings: RunSettings
) -> frozenset[str] | None:
    """The candidate's kernel names for the GPU trace check, or None (and why) where it is off."""
    if target.device != "cuda":
        verdict.checks["trace"] = "skipped: CPU target (symbol checks forbid threads instead)"
        return None
    if library is None:
        upstream = settings.candidate_upstream
        verdict.checks["trace"] = f"skipped: self-check of the upstream {upstream}"
        return None
    names = trace.own_kernels(library)
    verdict.checks["trace"] = f"on every scenario; the candidate's kernels: {len(names)}"
    return names
