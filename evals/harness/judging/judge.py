"""Judging one scenario: verify on fresh inputs, then time the candidate.

The upstreams are timed after every scenario, once the candidate's process is gone
(:func:`evals.harness.judging.judge_upstreams.time_all_upstreams`).
"""

from __future__ import annotations

import time

import torch

from evals.harness.failures import Code, Failure
from evals.harness.judging.judge_time import time_scenario
from evals.harness.measurement.gpu import release_cached_memory
from evals.harness.scenarios import Scenario
from evals.harness.targets.base import Target
from evals.harness.targets.guards import too_large_to_copy_twice
from evals.harness.verdict.record import ScenarioResult
from evals.harness.verification.sampled_check import check_sampled
from evals.harness.verification.verify import (
    check_meta,
    check_output,
    expected,
    unwritten_elements,
)
from evals.harness.worker_link import channel
from evals.harness.worker_link.session import (
    Session,
    Tally,
    derive_seed,
    note_peak,
    unpack,
)
from evals.harness.worker_link.worker_client import WorkerFailure

__all__ = [
    "PHASES",
    "Session",
    "Tally",
    "command_phases",
    "derive_seed",
    "judge_scenario",
    "run_phases",
]

RACE_ULPS = 2.0
"""Runs on the same input may differ by rounding only: this many epsilons of the output dtype,
at the output's scale (an atomic reduction that reorders additions stays within it)."""
PHASES = ("verify", "probe", "time")
"""The phases of judging one scenario, in order, each timed (``ScenarioResult.seconds``)."""


def judge_scenario(
    session: Session, scenario: Scenario, phases: tuple[str, ...] | None = None
) -> ScenarioResult:
    """Verify the candidate on ``scenario`` and, for bench and score, time it.

    ``phases``: the phases to run, in :data:`PHASES` order (default: all the command runs);
    :func:`run_phases` runs the rest later.
    """
    target = session.target
    work = target.work(scenario)
    result = ScenarioResult(scenario, flops=work.flops, bytes=work.bytes)
    for up in target.upstreams:
        reason = up.unsupported_reason(scenario)
        if reason is not None:
            result.unsupported[up.name] = reason
    default = command_phases(session.command, scenario)
    run_phases(session, result, default if phases is None else phases)
    return result


def command_phases(command: str, scenario: Scenario | None = None) -> tuple[str, ...]:
    """The phases a command judges a scenario by.

    ``check`` does not time, nor does any command a covering row (``scenario.covering``).
    """
    untimed = command == "check" or (scenario is not None and scenario.covering)
    return PHASES[:2] if untimed else PHASES


def run_phases(session: Session, result: ScenarioResult, phases: tuple[str, ...]) -> None:
    """Run ``phases`` on ``result`` until one fails; its failure (or none) becomes the result's."""
    steps = {"verify": _verify, "probe": _probe, "time": time_scenario}
    failure = None
    try:
        for name in phases:
            t0 = time.monotonic()
            try:
                failure = steps[name](session, result.scenario, result)
            finally:
                result.seconds[name] = time.monotonic() - t0
            if failure is not None:
                break
    except WorkerFailure as exc:
        failure = exc.failure
    finally:
        if session.target.device == "cuda":
            release_cached_memory()
    result.failure = failure
    result.correct = failure is None


def _verify(session: Session, scenario: Scenario, result: ScenarioResult) -> Failure | None:
    target = session.target
    spec = target.expected_output(scenario)
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
            reference, baseline = expected(
                target, scenario, target.make_inputs(scenario, input_seed)
            )
        except Exception as exc:  # the harness's own side failed: say so, do not blame the kernel
            reason = f"reference or baseline failed: {type(exc).__name__}: {exc}"
            return Failure(Code.HARNESS_ERROR, reason)
        check = check_output(target, scenario, out, reference, baseline)
        del reference, baseline
        if target.device == "cuda":  # hand the memory back before the worker's next request
            note_peak(result, "harness", torch.cuda.max_memory_reserved())
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
            unwritten = unwritten_elements(out, rerun)
            if unwritten:
                reason = (
                    f"{unwritten} output elements were never written "
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


def _probe(session: Session, scenario: Scenario, result: ScenarioResult) -> Failure | None:
    """Same pointers with new data, same data in new buffers, and three runs that must agree."""
    target = session.target
    seed_b = derive_seed(session.seed, scenario.id, "probe-b")
    seed_c = derive_seed(session.seed, scenario.id, "probe-c")
    request = {
        "op": "probe",
        "scenario": scenario.to_json(),
        "seed_b": seed_b,
        "seed_a": derive_seed(session.seed, scenario.id, "probe-a"),
        "seed_c": seed_c,
    }
    header, payload = session.client.request(request)
    note_peak(result, "worker", header.get("peak_reserved_bytes"))
    outputs = unpack(session, header["tensors"], payload)
    t0 = time.monotonic()
    try:
        failure, in_place = _check_probe_outputs(target, scenario, outputs, (seed_b, seed_c))
    finally:
        session.tally.reference_s += time.monotonic() - t0
    if failure is not None:
        return failure
    result.checks["anti_caching"] = (
        "passed in part (inputs too large to copy twice): a few rows of k and v rewritten in "
        "place after three runs in the same buffers"
        if in_place
        else "passed: same pointers with new data, same data in new buffers, a few rows of "
        "k and v rewritten in place"
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


_PROBE_HOWS = (
    "in the buffers of an earlier call refilled with new data (a result or pointer-keyed cache)",
    "on the same data in new buffers",
    "after a few rows of k and v were rewritten in place (a cache keyed on a sample of k and v)",
)


def _check_probe_outputs(
    target: Target, scenario: Scenario, outputs: list[torch.Tensor], seeds: tuple[int, int]
) -> tuple[Failure | None, bool]:
    """The probe's outputs against B's inputs (the last: with k and v partly rewritten).

    The parent, not the worker's answer, decides how many outputs the probe owes: three, or
    only the last where B's inputs are too large to copy twice (``serve.Worker.probe``).

    Returns:
        The failure or None, and whether the probe ran in place (one output).
    """
    seed_b, seed_c = seeds
    inputs = target.make_inputs(scenario, seed_b)
    in_place = too_large_to_copy_twice(inputs)
    owed = 1 if in_place else len(_PROBE_HOWS)
    if len(outputs) != owed:
        reason = f"the probe's worker answered with {len(outputs)} outputs, not {owed}"
        return Failure(Code.STALE_RESULT, reason), in_place
    hows = _PROBE_HOWS[2:] if in_place else _PROBE_HOWS
    failures: list[Failure | None] = []
    if not in_place:  # the first two ran on B's inputs: one reference serves both
        failures = check_sampled(target, scenario, outputs[:2], inputs,
                                 seed=derive_seed(seed_c, 0))  # fmt: skip
        # B's inputs rebuilt (the baseline may have appended to a cache)
        inputs = target.make_inputs(scenario, seed_b)
    target.rewrite_kv_part(scenario, inputs, seed_c)
    failures += check_sampled(target, scenario, outputs[-1:], inputs, seed=derive_seed(seed_c, 1))
    for failure, how in zip(failures, hows, strict=True):
        if failure is not None:
            return Failure(Code.STALE_RESULT, f"wrong result {how}: {failure.reason}"), in_place
    return None, in_place


def _run(
    session: Session, scenario: Scenario, seed: int, *, poison: str, result: ScenarioResult
) -> torch.Tensor:
    header, payload = session.client.request(
        {"op": "run", "scenario": scenario.to_json(), "seed": seed, "poison": poison}
    )
    session.tally.candidate_s += float(header.get("candidate_s", 0.0))
    note_peak(result, "worker", header.get("peak_reserved_bytes"))
    meta = header["tensor"]
    if meta["dtype"] not in channel.WIRE_DTYPES:
        reason = f"output dtype {meta['dtype']} is not supported"
        raise WorkerFailure(Failure(Code.WRONG_DTYPE, reason))
    return unpack(session, [{**meta, "nbytes": len(payload)}], payload)[0]
