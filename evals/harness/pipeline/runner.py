"""Runs ``check``, ``bench`` and ``score``: build, verify, time, and assemble the verdict."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import secrets
import tempfile
import threading
import time
from pathlib import Path

from evals.harness.building.build import BuildResult, build
from evals.harness.building.cache_dir import default_cache_dir
from evals.harness.contract.contract_draw import drawn_scenarios
from evals.harness.failures import Code, Failure, HarnessInputError
from evals.harness.judging.judge import PHASES, Tally
from evals.harness.judging.judge_locked import Notify, fail_all, judge_locked, run_lock
from evals.harness.measurement.device_lock import LockRecord
from evals.harness.pipeline.environment import environment_fault
from evals.harness.run_settings import RunSettings
from evals.harness.sandbox import footprint, memory_walls
from evals.harness.sandbox.hygiene import hash_file, verify_install
from evals.harness.sandbox.process_tree import outlived, reap_strays
from evals.harness.scenarios import Suite
from evals.harness.static import baseline_prebuild
from evals.harness.static.static_checks import check_includes, check_symbols
from evals.harness.targets import Target, get_target
from evals.harness.verdict import provenance
from evals.harness.verdict.record import Verdict
from evals.harness.worker_link.budget import Budget
from evals.harness.worker_link.session import Progress
from evals.landlock import available_abi

NOT_THE_CANDIDATE = frozenset({Code.DEVICE_BUSY, Code.HARNESS_ERROR, Code.ENVIRONMENT})
"""Run-wide failures that are not the candidate's doing (a busy device, a broken build
environment): the verdict's status is ``error`` (exit 2), not ``failed``."""


def _setup(settings: RunSettings, verdict: Verdict) -> tuple[Target, Suite]:
    """Resolve target, suite and candidate; raises HarnessInputError for bad input."""
    target = get_target(settings.target)
    suite = target.load_suite(settings.suite)
    if settings.scenario_ids:
        unknown = sorted(set(settings.scenario_ids) - set(suite.ids))
        if unknown:
            reason = f"unknown scenario(s) in suite {suite.name}: {', '.join(unknown)}"
            raise HarnessInputError(Failure(Code.BAD_ARGUMENT, reason))
        picked = tuple(s for s in suite.scenarios if s.id in settings.scenario_ids)
        suite = Suite(suite.name, picked)
    if settings.call_timeout_s is not None:
        if settings.call_timeout_s <= 0:
            reason = f"timeout must be positive, got {settings.call_timeout_s}"
            raise HarnessInputError(Failure(Code.BAD_ARGUMENT, reason))
        target.limits = dataclasses.replace(target.limits, call_timeout_s=settings.call_timeout_s)
    if settings.candidate_upstream is not None:
        known = [u.name for u in target.upstreams]
        if settings.candidate_upstream not in known or settings.kernel is not None:
            reason = (
                f"--candidate-upstream takes one of {', '.join(known)} and no --kernel, "
                f"got {settings.candidate_upstream!r}"
            )
            raise HarnessInputError(Failure(Code.BAD_ARGUMENT, reason))
        verdict.kernel["upstream"] = settings.candidate_upstream
    elif settings.kernel is None:
        raise HarnessInputError(Failure(Code.BAD_ARGUMENT, "give --kernel FILE"))
    else:
        source = _read_kernel(settings.kernel, target)
        verdict.kernel["sha256"] = hashlib.sha256(source).hexdigest()
    return target, suite


def evaluate(
    settings: RunSettings, progress: Progress | None = None, notify: Notify | None = None
) -> Verdict:
    """Judge one candidate. Never raises for a bad candidate or bad input: see the verdict.

    ``progress`` hears of each judged scenario; ``notify`` of waits for the device lock.
    """
    start = time.monotonic()
    kernel = {"path": str(settings.kernel) if settings.kernel else None}
    verdict = Verdict(settings.command, settings.target, settings.suite, kernel, None, "error")
    verdict.settings = settings.to_json()
    try:
        target, suite = _setup(settings, verdict)
    except HarnessInputError as exc:
        verdict.failure = exc.failure
        return verdict
    verdict.failure = environment_fault(target, building=settings.kernel is not None)
    if verdict.failure is not None:
        return verdict
    verdict.upstreams = {u.name: u.version() for u in target.upstreams}
    verdict.provenance = provenance.collect(target, verdict.upstreams)
    verdict.settings = {
        **verdict.settings,
        "timing": dataclasses.asdict(target.timing),
        "limits": dataclasses.asdict(target.limits),
    }
    # before the secret exists: no process of this user may read it out of this one
    verdict.checks["parent_memory"] = memory_walls.seal()
    use_secret = settings.command == "score" or settings.seed is None
    seed = secrets.randbits(62) if use_secret or settings.seed is None else settings.seed
    verdict.seed = seed
    # a whole suite: contract scenarios drawn from the seed too (not in a self-check, which
    # measures the timing: FA3 itself overflows on large negative scales)
    if not settings.scenario_ids and settings.candidate_upstream is None:
        drawn = drawn_scenarios(target, suite.name, seed)
        suite = Suite(suite.name, suite.scenarios + drawn)
    rejected = _static_checks(target, settings, None, verdict)
    if settings.command == "score":
        hashes = hash_file()
        tampered = verify_install(hashes)
        rejected = rejected or tampered
        outcome = tampered.reason if tampered else "passed" if hashes else "no hash list here"
        verdict.checks["install"] = outcome
    prepare_s = time.monotonic() - start
    # before anything of the candidate's is compiled: what outlives the run, as it was
    watch = footprint.Watch(settings.cache_dir or default_cache_dir()) if settings.kernel else None
    _build_and_judge(verdict, target, settings, suite, (rejected, watch), (progress, notify))
    verdict.timing["prepare_s"] = prepare_s
    verdict.timing["wall_s"] = time.monotonic() - start
    return verdict


def _build_and_judge(
    verdict: Verdict,
    target: Target,
    settings: RunSettings,
    suite: Suite,
    before: tuple[Failure | None, footprint.Watch | None],
    listeners: tuple[Progress | None, Notify | None],
) -> None:
    """Build the candidate and judge it; on a CPU target all of it under the device's lock.

    ``before``: why the candidate is rejected already (or None), and the footprint recorded
    before its build (None in a self-check).

    A CPU target measures the host CPU, which another run's compiler (its candidate's build
    and the trivial kernel's prebuild) takes from the timed calls: an upstream judged against
    itself fell from about 1.0x to 0.905x beside one building run and to 0.167x beside two.
    So a CPU target takes its lock once, before either build, and judging reuses it (a second
    ``flock`` from this process would wait on itself). A GPU target builds outside its lock:
    the compiler uses the CPU, not the measured GPU, so a run compiles while another is timed.
    A busy device fails every scenario, as it does when judging waits too long.
    """
    notify = listeners[1]
    rejected, watch = before
    with contextlib.ExitStack() as stack:
        held = None
        if rejected is None and target.device == "cpu":
            try:
                held = stack.enter_context(run_lock(target, settings, notify))
                verdict.lock = held
            except HarnessInputError as exc:
                rejected = exc.failure
        private = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kernelseek-build-")))
        # score builds afresh in a private cache, its symbol baseline too: nothing another
        # process wrote (an agent's planted record) can take part in the score
        cache = settings.cache_dir or (private if settings.command == "score" else None)
        prebuild = None
        if settings.kernel is not None and rejected is None:
            scoring = settings.command == "score"
            root = cache or default_cache_dir()
            prebuild = baseline_prebuild.start(target, clean_env=scoring, cache=root)
        built = None if rejected else _build(target, settings, cache, notify)
        builds = (built, prebuild, cache)
        _finish(verdict, target, settings, suite, builds, (rejected, watch), listeners, held)


def _finish(
    verdict: Verdict,
    target: Target,
    settings: RunSettings,
    suite: Suite,
    builds: tuple[BuildResult | None, threading.Thread | None, Path | None],
    before: tuple[Failure | None, footprint.Watch | None],
    listeners: tuple[Progress | None, Notify | None],
    held: LockRecord | None,
) -> None:
    """Judge the built candidate (or record why it cannot be judged) and fill the timing.

    ``builds``: the candidate's build, the trivial kernel's, still compiling beside it
    (:mod:`evals.harness.static.baseline_prebuild`; waiting for it counts as static checks), and
    the cache both were built in (None: the shared one).
    ``before``: as :func:`_build_and_judge`'s. ``held``: the device's lock when this run
    already holds it (a CPU target's).
    """
    built, prebuild, cache = builds
    rejected, watch = before
    verdict.build = built.to_json() if built else None
    tally = Tally()
    t0 = time.monotonic()
    if prebuild is not None:
        prebuild.join()
    rejected = rejected or outlived("the build", reap_strays())
    rejected = rejected or _static_checks(target, settings, built, verdict, baseline_root=cache)
    static_s = time.monotonic() - t0
    left: list[str] = []
    if built is not None and built.library is None:
        assert built.failure is not None
        fail_all(verdict, suite.scenarios, built.failure)
    elif rejected is not None:
        fail_all(verdict, suite.scenarios, rejected)
    else:
        library = built.library if built else None
        scenarios = suite.scenarios
        budget = Budget.after_build(settings.time_budget_s, built)
        left = judge_locked(
            verdict, target, library, scenarios, tally, listeners, settings, held, budget=budget
        )
    stray = outlived("the candidate's worker", reap_strays())  # before the verdict is written
    verdict.failure = verdict.failure or stray
    if watch is not None:
        watch.report(verdict, left, confined=_confined(verdict, built))
    verdict.status = (
        "ok" if verdict.failure is None and all(r.correct for r in verdict.results) else "failed"
    )
    if verdict.failure is not None and verdict.failure.code in NOT_THE_CANDIDATE:
        verdict.status = "error"
    parts = [*PHASES, *sorted({k for r in verdict.results for k in r.seconds} - set(PHASES))]
    verdict.timing = {
        "build_s": built.seconds if built else 0.0,
        "static_checks_s": static_s,
        "candidate_calls_s": tally.candidate_s,
        "upstream_calls_s": tally.upstream_s,
        "reference_s": tally.reference_s,
        "trace_s": tally.trace_s,
        "unpack_s": tally.unpack_s,
        **{f"{part}_s": sum(r.seconds.get(part, 0.0) for r in verdict.results) for part in parts},
        "start_s": tally.start_s,
        "setup_s": tally.setup_s,
        "requests_s": tally.requests_s,
        "worker_s": tally.worker_s,
    }


BUILD_TICK_S = 5.0
"""Seconds between the progress lines of a build."""


def _build(
    target: Target, settings: RunSettings, cache: Path | None, notify: Notify | None
) -> BuildResult | None:
    """Build the candidate in ``cache`` (None: the shared one); ``score`` in a clean environment.

    ``notify`` hears when the build starts, every :data:`BUILD_TICK_S` while it compiles,
    and how it ended.
    """
    if settings.kernel is None:
        return None
    scoring = settings.command == "score"
    name = settings.kernel.name
    done = threading.Event()
    start = time.monotonic()

    def tick() -> None:
        while not done.wait(BUILD_TICK_S) and notify is not None:
            notify(f"building {name}: {time.monotonic() - start:.0f} s")

    if notify is not None:
        notify(f"building {name} for {target.name}")
        threading.Thread(target=tick, daemon=True).start()
    try:
        result = build(target, settings.kernel, cache_dir=cache, clean_env=scoring)
    finally:
        done.set()
    if notify is not None:
        how = "cached" if result.cached else f"{result.seconds:.1f} s"
        notify(f"built {name} ({how})" if result.library else f"build failed ({how})")
    return result


def _static_checks(
    target: Target,
    settings: RunSettings,
    built: BuildResult | None,
    verdict: Verdict,
    *,
    baseline_root: Path | None = None,
) -> Failure | None:
    """Includes before the build, symbols after it; each finding is recorded in the flags.

    ``baseline_root``: the cache of the trivial kernel's symbol baseline (None: the shared).
    """
    policy = target.policy
    if policy is None or settings.kernel is None:
        return None
    if built is None:
        failure = check_includes(settings.kernel.read_text(errors="replace"), policy)
        verdict.checks["includes"] = f"failed: {failure.reason}" if failure else "passed"
        return failure
    if built.library is None:
        return None
    if not policy.check_symbols:
        verdict.checks["symbols"] = "skipped: this target's policy does not check symbols"
        return None
    failure, finding = check_symbols(built.library, policy, baseline_root=baseline_root)
    verdict.checks["symbols"] = f"failed: {failure.reason}" if failure else finding
    return failure


def _confined(verdict: Verdict, built: BuildResult | None) -> bool:
    """Whether every process that touched the candidate could write only to its own folder.

    Then a change to what outlives the run was made by something else on the machine. The
    build child's record is printed before it reads the candidate; the worker's comes after
    its library loaded, so the parent also asks the kernel itself whether Landlock is there
    (the worker applies it before anything of the candidate's exists): a worker claiming a
    confinement this kernel cannot give gains nothing.
    """
    build_writes = str((built.confinement or {}).get("writes", "")) if built else "active"
    if built is not None and built.cached:
        build_writes = "active"  # no build process ran in this run
    worker_writes = str((verdict.protections or {}).get("writes", ""))
    claimed = build_writes.startswith("active") and worker_writes.startswith("active")
    return claimed and available_abi() >= 1


def _read_kernel(path: Path, target: Target) -> bytes:
    suffix = target.contract.source_suffix
    if path.is_dir():
        reason = f"--kernel is a directory, not a file: {path} (give one {suffix} file)"
        raise HarnessInputError(Failure(Code.BAD_ARGUMENT, reason))
    if not path.exists():
        raise HarnessInputError(Failure(Code.MISSING_FILE, f"kernel file not found: {path}"))
    if not path.is_file():
        reason = f"--kernel is not a regular file: {path} (give one {suffix} file)"
        raise HarnessInputError(Failure(Code.BAD_ARGUMENT, reason))
    if path.suffix != suffix:
        reason = f"{target.name} expects one {suffix} file, got {path.name}"
        raise HarnessInputError(Failure(Code.BAD_ARGUMENT, reason))
    try:
        return path.read_bytes()
    except OSError as exc:
        reason = f"kernel file is not readable: {path} ({exc.strerror or exc})"
        raise HarnessInputError(Failure(Code.BAD_ARGUMENT, reason)) from None
