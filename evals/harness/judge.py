"""Judging one scenario: verify on fresh inputs, then time against the upstreams."""

from __future__ import annotations

import dataclasses
import hashlib
import random
import time
from dataclasses import dataclass, field
from typing import Any

import torch

from evals.harness import channel
from evals.harness.failures import Code, Failure
from evals.harness.gpu import Ceilings, release_cached_memory
from evals.harness.scenarios import Scenario
from evals.harness.targets import Inputs, Target
from evals.harness.timing import TimingSettings, TimingStats, call_seed
from evals.harness.verdict import ScenarioResult
from evals.harness.verify import check_meta, check_values
from evals.harness.worker_client import WorkerClient, WorkerFailure

RACE_ULPS = 2.0
"""Runs on the same input may differ by rounding only: this many epsilons of the output dtype,
at the output's scale (an atomic reduction that reorders additions stays within it)."""
PHASES = ("verify", "probe", "time")
"""The phases of judging one scenario, in order, each timed (``ScenarioResult.seconds``)."""
SUSPICIOUS_SPEEDUP = 1.5
"""A speedup above this over any upstream is flagged for a person to look at (not failed)."""
TIMING_ATTEMPTS = 2
"""Timing requests per scenario: one more when the first does not converge."""
TIMED_CHECKS_PER_SET = 2
"""Timed outputs of each input set verified, chosen at random after the calls were made."""
HOST_ISSUE_CAP_US = 200.0
"""GPU: host issue time (median, microseconds) a candidate call may always take."""
HOST_ISSUE_UPSTREAM_FACTOR = 2.0
"""GPU: or up to this many times the slowest upstream's issue time on the scenario."""


def derive_seed(seed: int, *parts: object) -> int:
    """A 62-bit seed derived from ``seed`` and ``parts``."""
    digest = hashlib.sha256("/".join(map(str, (seed, *parts))).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 2


@dataclass
class Tally:
    """Seconds a run spent, by where they went.

    Candidate calls, upstream calls, the parent's reference checks, the trace and unpacking
    outputs; worker start-up and ceilings (``setup_s``); all requests (``requests_s``) and the
    worker's share of them (``worker_s``).
    """

    candidate_s: float = 0.0
    upstream_s: float = 0.0
    reference_s: float = 0.0
    trace_s: float = 0.0
    unpack_s: float = 0.0
    setup_s: float = 0.0
    requests_s: float = 0.0
    worker_s: float = 0.0


@dataclass
class Session:
    """What judging a scenario needs: the target, the worker, the run's seed and command."""

    target: Target
    client: WorkerClient
    seed: int
    command: str
    ceilings: Ceilings | None = None
    tally: Tally = field(default_factory=Tally)
    own_kernels: frozenset[str] | None = None
    """The candidate's kernel names for the GPU trace check; None where it does not apply."""
    upstreams: WorkerClient | None = None
    """The worker that times the upstreams: a process that never loads the candidate."""


def judge_scenario(session: Session, scenario: Scenario) -> ScenarioResult:
    """Verify the candidate on ``scenario`` and, for bench and score, time it."""
    target = session.target
    work = target.work(scenario)
    result = ScenarioResult(scenario, flops=work.flops, bytes=work.bytes)
    for up in target.upstreams:
        reason = up.unsupported_reason(scenario)
        if reason is not None:
            result.unsupported[up.name] = reason
    steps = {"verify": _verify, "probe": _probe, "time": _time}
    failure = None
    try:
        for name in PHASES[:2] if session.command == "check" else PHASES:
            phase = steps[name]
            t0 = time.monotonic()
            try:
                failure = phase(session, scenario, result)
            finally:
                result.seconds[name] = time.monotonic() - t0
            if failure is not None:
                break
    except WorkerFailure as exc:
        failure = exc.failure
    finally:
        if target.device == "cuda":
            release_cached_memory()
    result.failure = failure
    result.correct = failure is None
    return result


def _verify(session: Session, scenario: Scenario, result: ScenarioResult) -> Failure | None:
    target = session.target
    spec = target.expected_output(scenario)
    dtype = str(spec.dtype).removeprefix("torch.")
    for i in range(target.inputs_per_scenario):
        input_seed = derive_seed(session.seed, scenario.id, "verify", i)
        out = _run(session, scenario, input_seed, poison="nan", result=result)
        failure = check_meta(out, spec)
        if failure is not None:
            return failure
        t0 = time.monotonic()
        if target.device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        try:
            reference, baseline = _expected(
                target, scenario, target.make_inputs(scenario, input_seed)
            )
        except Exception as exc:  # the harness's own side failed: say so, do not blame the kernel
            reason = f"reference or baseline failed: {type(exc).__name__}: {exc}"
            return Failure(Code.HARNESS_ERROR, reason)
        check = check_values(
            out, reference=reference, baseline=baseline, rule=target.accuracy, dtype=dtype
        )
        del reference, baseline
        if target.device == "cuda":  # hand the memory back before the worker's next request
            _note_peak(result, "harness", torch.cuda.max_memory_reserved())
            release_cached_memory()
        session.tally.reference_s += time.monotonic() - t0
        figures = {
            "max_abs": check.max_abs_error,
            "mean_abs": check.mean_abs_error,
            "baseline_max_abs": check.baseline_error,
            "tolerance": check.tolerance,
        }
        result.errors = {k: max(result.errors.get(k, v), v) for k, v in figures.items()}
        if check.failure is not None and check.failure.code == Code.NAN_INF:
            rerun = _run(session, scenario, input_seed, poison="finite", result=result)
            if bool(rerun.isfinite().all()):
                reason = (
                    f"{check.nonfinite} output elements were never written "
                    "(they kept the NaN poison put in freshly allocated memory)"
                )
                return Failure(Code.UNWRITTEN_OUTPUT, reason)
        if check.failure is not None:
            return check.failure
    result.checks["verification"] = (
        f"passed on {target.inputs_per_scenario} fresh input sets: error <= "
        f"{target.accuracy.upstream_factor:g} x {target.accuracy.baseline}'s + floor, "
        "inputs unchanged, output fresh and written"
    )
    return None


def _check_against(
    target: Target, scenario: Scenario, out: torch.Tensor, inputs: Inputs
) -> Failure | None:
    """Apply the accuracy rule to ``out`` computed from ``inputs``."""
    spec = target.expected_output(scenario)
    failure = check_meta(out, spec)
    if failure is not None:
        return failure
    reference, baseline = _expected(target, scenario, inputs)
    dtype = str(spec.dtype).removeprefix("torch.")
    return check_values(
        out, reference=reference, baseline=baseline, rule=target.accuracy, dtype=dtype
    ).failure


def _probe(session: Session, scenario: Scenario, result: ScenarioResult) -> Failure | None:
    """Same pointers with new data, same data in new buffers, and three runs that must agree."""
    target = session.target
    seed_b = derive_seed(session.seed, scenario.id, "probe-b")
    request = {
        "op": "probe",
        "scenario": scenario.to_json(),
        "seed_b": seed_b,
        "seed_a": derive_seed(session.seed, scenario.id, "probe-a"),
    }
    header, payload = session.client.request(request)
    _note_peak(result, "worker", header.get("peak_reserved_bytes"))
    outputs = _unpack(session, header["tensors"], payload)
    if header.get("skipped"):
        result.checks["anti_caching"] = "skipped: inputs too large to copy twice"
    t0 = time.monotonic()
    inputs = target.make_inputs(scenario, seed_b) if outputs else {}
    hows = [
        "in the buffers of an earlier call refilled with new data (a result or "
        "pointer-keyed cache)",
        "on the same data in new buffers",
    ]
    checks = list(zip(outputs, hows, strict=False))
    try:
        for out, how in checks:
            failure = _check_against(target, scenario, out, inputs)
            if failure is not None:
                return Failure(Code.STALE_RESULT, f"wrong result {how}: {failure.reason}")
    finally:
        session.tally.reference_s += time.monotonic() - t0
    if checks:
        result.checks["anti_caching"] = (
            "passed: same pointers with new data, same data in new buffers"
        )
    eps = torch.finfo(target.expected_output(scenario).dtype).eps
    limit = RACE_ULPS * eps * max(header["race_scale"], 1.0)
    if header["race_spread"] > limit:
        reason = (
            f"three runs on the same input differ by up to {header['race_spread']:.3g} "
            f"(more than rounding, {limit:.3g}): a race"
        )
        return Failure(Code.NONDETERMINISTIC, reason)
    result.checks["races"] = f"passed: three runs agree within {limit:.3g}"
    return None


def _expected(
    target: Target, scenario: Scenario, inputs: Inputs
) -> tuple[torch.Tensor, torch.Tensor]:
    """The float64 reference and the accuracy baseline's output, computed in this process."""
    reference = target.reference(scenario, inputs)
    baseline = target.upstream(target.accuracy.baseline).prepare(inputs)()
    return reference, baseline


def _unpack(
    session: Session, metas: list[dict[str, Any]], payload: channel.Buffer
) -> list[torch.Tensor]:
    """Rebuild the worker's tensors (onto the GPU for GPU targets), counting the seconds."""
    t0 = time.monotonic()
    try:
        return channel.unpack_tensors(metas, payload)
    finally:
        session.tally.unpack_s += time.monotonic() - t0


def _note_peak(result: ScenarioResult, process: str, peak: object) -> None:
    """Keep the largest GPU memory reserved by ``process`` (worker or harness) in this scenario."""
    if isinstance(peak, int | float):
        key = f"{process}_peak_gib"
        result.memory[key] = max(result.memory.get(key, 0.0), peak / 2**30)


def _run(
    session: Session, scenario: Scenario, seed: int, *, poison: str, result: ScenarioResult
) -> torch.Tensor:
    header, payload = session.client.request(
        {"op": "run", "scenario": scenario.to_json(), "seed": seed, "poison": poison}
    )
    session.tally.candidate_s += float(header.get("candidate_s", 0.0))
    _note_peak(result, "worker", header.get("peak_reserved_bytes"))
    meta = header["tensor"]
    if meta["dtype"] not in channel.WIRE_DTYPES:
        reason = f"output dtype {meta['dtype']} is not supported"
        raise WorkerFailure(Failure(Code.WRONG_DTYPE, reason))
    return _unpack(session, [{**meta, "nbytes": len(payload)}], payload)[0]


def _time(session: Session, scenario: Scenario, result: ScenarioResult) -> Failure | None:
    """Time candidate and upstreams; re-time once when the timing does not converge."""
    for attempt in range(TIMING_ATTEMPTS):
        header, request = _time_request(session, scenario, result, attempt)
        if header["stop"] == "converged":
            break
    _record_timing(session, result, header, attempts=attempt + 1)
    failure = _check_timed(session, result, request, header.get("kept", []))
    return failure or _host_issue(session, result) or _plausible(session, scenario, result)


def _time_request(
    session: Session, scenario: Scenario, result: ScenarioResult, attempt: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One timing round (fresh input seeds and order per attempt) and its merged answer.

    The candidate is timed in its worker, then the upstreams in theirs (a process that never
    loads the candidate), one after the other on the same device, from the same seeds.
    """
    target, settings = session.target, session.target.timing
    upstreams = [u.name for u in target.upstreams if u.name not in result.unsupported]
    n_sets = max(3, target.inputs_per_scenario)
    request = {
        "op": "time",
        "scenario": scenario.to_json(),
        "seeds": [
            derive_seed(session.seed, scenario.id, "time", attempt, i) for i in range(n_sets)
        ],
        "settings": dataclasses.asdict(_unpredictable(settings, session, scenario, attempt)),
        "rng_seed": derive_seed(session.seed, scenario.id, "order", attempt),
    }
    timeout = target.limits.call_timeout_s + 2 * settings.time_cap_s
    header, _ = session.client.request(
        {**request, "candidate": True, "upstreams": []}, timeout_s=timeout
    )
    answers = [header]
    if upstreams and session.upstreams is not None:
        try:
            up, _ = session.upstreams.request(
                {**request, "candidate": False, "upstreams": upstreams}, timeout_s=timeout
            )
        except WorkerFailure as exc:  # never the candidate's doing
            reason = f"the upstreams' worker failed: {exc.failure.reason}"
            raise WorkerFailure(Failure(Code.HARNESS_ERROR, reason)) from exc
        answers.append(up)
    for answer in answers:
        _tally_answer(session, result, answer)
    return _merge(answers), request


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
    _note_peak(result, "worker", answer.get("peak_reserved_bytes"))
    result.unsupported.update(answer.get("unsupported", {}))
    for name, busy in answer["busy_s"].items():
        if name == "candidate":
            session.tally.candidate_s += busy
        else:
            session.tally.upstream_s += busy
    for part, key in (("time_loop", "loop_s"), ("time_worker", "worker_s")):
        result.seconds[part] = result.seconds.get(part, 0.0) + float(answer.get(key, 0.0))


def _merge(answers: list[dict[str, Any]]) -> dict[str, Any]:
    """One timing header from the candidate's answer and the upstreams' (converged if both)."""
    merged = dict(answers[0])
    for extra in answers[1:]:
        for key in ("stats", "latency", "issue", "polluted", "spin_us", "busy_s"):
            merged[key] = {**merged.get(key, {}), **extra.get(key, {})}
        if extra["stop"] != "converged":
            merged["stop"] = extra["stop"]
    return merged


def _record_timing(
    session: Session, result: ScenarioResult, header: dict[str, Any], *, attempts: int
) -> None:
    """Device times, latencies, issue times and how the timing went, with notes for a reader."""
    settings = session.target.timing
    result.times = {name: TimingStats(**st) for name, st in header["stats"].items()}
    result.latency = {name: TimingStats(**st) for name, st in header.get("latency", {}).items()}
    result.issue = {name: TimingStats(**st) for name, st in header.get("issue", {}).items()}
    worst = max(result.times.values(), key=lambda st: st.rse)
    converged = header["stop"] == "converged"
    polluted = {k: v for k, v in header.get("polluted", {}).items() if v}
    result.timing = {
        "trials": int(header["trials"]),
        "stop": header["stop"],
        "attempts": attempts,
        "converged": converged,
        "worst_rse": worst.rse,
        "polluted": polluted,
    }
    if session.target.device == "cuda":  # the CPU has no spin: device time is wall time
        result.timing["spin_us"] = header.get("spin_us", {})
    for name in result.times:
        speedup = result.speedup(name) if name != "candidate" else None
        if speedup is not None and speedup > SUSPICIOUS_SPEEDUP:
            result.flags.append(f"suspicious: {speedup:.2f}x over {name}; worth a look")
    if not converged:
        result.flags.append(
            f"timing did not converge in {attempts} attempts (stopped at {header['stop']}): "
            f"rse {worst.rse:.2%} over the target {settings.target_rse:.2%}; "
            "its figures are less precise"
        )
    for name, n in polluted.items():
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
    session: Session, result: ScenarioResult, request: dict[str, Any], kept: list[int]
) -> Failure | None:
    """Timed outputs chosen at random after the calls were made must be right too.

    Up to :data:`TIMED_CHECKS_PER_SET` of each input set's timed calls, drawn from the trials
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
            min(TIMED_CHECKS_PER_SET, sum(1 for t in kept if t % n_sets == i)),
        )
    )
    try:
        header, payload = session.client.request({"op": "timed_outputs", "trials": chosen})
        outputs = _unpack(session, header["tensors"], payload)
        sets = target.make_timing_inputs(scenario, list(request["seeds"]))
        for trial, out in zip(chosen, outputs, strict=True):
            inputs = sets[trial % n_sets]
            if target.timing.fresh_queries:
                seed = call_seed(request["rng_seed"], trial, "candidate")
                target.refill_query(scenario, inputs, seed)
            failure = _check_against(target, scenario, out, inputs)
            if failure is not None:
                reason = f"a timed call (trial {trial}, input set {trial % n_sets}) was wrong"
                return Failure(Code.STALE_RESULT, f"{reason}: {failure.reason}")
    finally:
        result.seconds["time_check"] = time.monotonic() - t0
        session.tally.reference_s += result.seconds["time_check"]
    fresh = " (a fresh q before every timed call)" if target.timing.fresh_queries else ""
    result.checks["timed_outputs"] = (
        f"passed: {len(chosen)} timed outputs chosen at random after the calls, up to "
        f"{TIMED_CHECKS_PER_SET} of each of {n_sets} input sets{fresh}"
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
