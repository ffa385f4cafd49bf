"""Runs ``check``, ``bench`` and ``score``: build, verify, time, and assemble the verdict."""

from __future__ import annotations

import dataclasses
import hashlib
import secrets
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import torch

from evals.harness import channel, provenance
from evals.harness.build import build
from evals.harness.failures import Code, Failure, HarnessInputError
from evals.harness.scenarios import Scenario
from evals.harness.targets import Target, get_target
from evals.harness.timing import TimingStats
from evals.harness.verdict import ScenarioResult, Verdict
from evals.harness.verify import check_meta, check_values
from evals.harness.worker_client import WorkerClient, WorkerFailure

Command = Literal["check", "bench", "score"]
Progress = Callable[[int, int, ScenarioResult], None]


@dataclass(frozen=True)
class RunSettings:
    """One harness invocation.

    Attributes:
        command: ``check`` (verify), ``bench`` (verify and time) or ``score`` (bench with a
            fresh secret seed).
        target: Target name.
        kernel: Candidate source file.
        suite: Suite name.
        seed: Input seed for check and bench (random when None); score always draws its own.
        cache_dir: Build cache (default: ``$KERNELSEEK_CACHE`` or ``~/.cache/kernelseek``).
        call_timeout_s: Overrides the target's per-request timeout (seconds) when set.

    """

    command: Command
    target: str
    kernel: Path
    suite: str = "dev"
    seed: int | None = None
    cache_dir: Path | None = None
    call_timeout_s: float | None = None

    def to_json(self) -> dict[str, object]:
        """JSON form, logged into the verdict."""
        data = dataclasses.asdict(self)
        return {k: str(v) if isinstance(v, Path) else v for k, v in data.items()}


def derive_seed(seed: int, *parts: object) -> int:
    """A 62-bit seed derived from ``seed`` and ``parts``."""
    digest = hashlib.sha256("/".join(map(str, (seed, *parts))).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 2


class _Tally:
    """Seconds spent inside candidate calls, upstream calls and the parent's own checks."""

    def __init__(self) -> None:
        self.candidate_s = 0.0
        self.upstream_s = 0.0
        self.reference_s = 0.0


def evaluate(settings: RunSettings, progress: Progress | None = None) -> Verdict:
    """Judge one candidate. Never raises for a bad candidate or bad input: see the verdict."""
    start = time.monotonic()
    kernel_info: dict[str, object] = {"path": str(settings.kernel)}
    verdict = Verdict(settings.command, settings.target, settings.suite, kernel_info, None, "error")
    verdict.settings = settings.to_json()
    try:
        target = get_target(settings.target)
        suite = target.load_suite(settings.suite)
        source = _read_kernel(settings.kernel, target)
        if settings.call_timeout_s is not None:
            if settings.call_timeout_s <= 0:
                reason = f"timeout must be positive, got {settings.call_timeout_s}"
                raise HarnessInputError(Failure(Code.BAD_ARGUMENT, reason))
            target.limits = dataclasses.replace(
                target.limits, call_timeout_s=settings.call_timeout_s
            )
    except HarnessInputError as exc:
        verdict.failure = exc.failure
        return verdict
    kernel_info["sha256"] = hashlib.sha256(source).hexdigest()
    verdict.upstreams = {u.name: u.version() for u in target.upstreams}
    verdict.provenance = provenance.collect(target, verdict.upstreams)
    verdict.settings = {**verdict.settings, "timing": dataclasses.asdict(target.timing),
                        "limits": dataclasses.asdict(target.limits)}  # fmt: skip
    use_secret = settings.command == "score" or settings.seed is None
    verdict.seed = secrets.randbits(62) if use_secret else settings.seed
    assert verdict.seed is not None
    built = build(target, settings.kernel, cache_dir=settings.cache_dir)
    verdict.build = built.to_json()
    tally = _Tally()
    if built.library is None:
        assert built.failure is not None
        _fail_all(verdict, suite.scenarios, built.failure)
    else:
        _judge_all(verdict, target, built.library, suite.scenarios, tally, progress)
    verdict.status = (
        "ok" if verdict.failure is None and all(r.correct for r in verdict.results) else "failed"
    )
    verdict.timing = {
        "wall_s": time.monotonic() - start,
        "build_s": built.seconds,
        "candidate_calls_s": tally.candidate_s,
        "upstream_calls_s": tally.upstream_s,
        "reference_s": tally.reference_s,
    }
    return verdict


def _read_kernel(path: Path, target: Target) -> bytes:
    if not path.is_file():
        raise HarnessInputError(Failure(Code.MISSING_FILE, f"kernel file not found: {path}"))
    suffix = target.contract.source_suffix
    if path.suffix != suffix:
        reason = f"{target.name} expects one {suffix} file, got {path.name}"
        raise HarnessInputError(Failure(Code.BAD_ARGUMENT, reason))
    return path.read_bytes()


def _fail_all(verdict: Verdict, scenarios: tuple[Scenario, ...], failure: Failure) -> None:
    verdict.failure = failure
    verdict.results = [ScenarioResult(s, failure=failure) for s in scenarios]


def _judge_all(
    verdict: Verdict,
    target: Target,
    library: Path,
    scenarios: tuple[Scenario, ...],
    tally: _Tally,
    progress: Progress | None,
) -> None:
    with tempfile.TemporaryDirectory(prefix="kernelseek-") as tmp:
        client = WorkerClient(target, library, Path(tmp) / "worker.log")
        try:
            client.start()
        except WorkerFailure as exc:
            _fail_all(verdict, scenarios, exc.failure)
            return
        try:
            for i, scenario in enumerate(scenarios):
                assert verdict.seed is not None
                result = judge_scenario(
                    target, client, scenario, verdict.seed, verdict.command, tally
                )
                verdict.results.append(result)
                if progress is not None:
                    progress(i + 1, len(scenarios), result)
        finally:
            client.close()


def judge_scenario(
    target: Target,
    client: WorkerClient,
    scenario: Scenario,
    seed: int,
    command: str,
    tally: _Tally,
) -> ScenarioResult:
    """Verify the candidate on ``scenario`` and, for bench and score, time it."""
    work = target.work(scenario)
    result = ScenarioResult(scenario, flops=work.flops, bytes=work.bytes)
    for up in target.upstreams:
        reason = up.unsupported_reason(scenario)
        if reason is not None:
            result.unsupported[up.name] = reason
    try:
        failure = _verify(target, client, scenario, seed, result, tally)
        if failure is None and command != "check":
            _time(target, client, scenario, seed, result, tally)
    except WorkerFailure as exc:
        failure = exc.failure
    result.failure = failure
    result.correct = failure is None
    return result


def _verify(
    target: Target,
    client: WorkerClient,
    scenario: Scenario,
    seed: int,
    result: ScenarioResult,
    tally: _Tally,
) -> Failure | None:
    spec = target.expected_output(scenario)
    worst: dict[str, float] = {}
    for i in range(target.inputs_per_scenario):
        input_seed = derive_seed(seed, scenario.id, "verify", i)
        out = _run(client, scenario, input_seed, poison="nan", tally=tally)
        failure = check_meta(out, spec)
        if failure is not None:
            return failure
        t0 = time.monotonic()
        inputs = target.make_inputs(scenario, input_seed)
        reference = target.reference(inputs)
        baseline = target.upstream(target.accuracy.baseline).prepare(inputs)()
        dtype = str(spec.dtype).removeprefix("torch.")
        check = check_values(
            out, reference=reference, baseline=baseline, rule=target.accuracy, dtype=dtype
        )
        tally.reference_s += time.monotonic() - t0
        for key, value in (("max_abs", check.max_abs_error), ("mean_abs", check.mean_abs_error),
                           ("baseline_max_abs", check.baseline_error),
                           ("tolerance", check.tolerance)):  # fmt: skip
            worst[key] = max(worst.get(key, value), value)
        result.errors = worst
        if check.failure is not None and check.failure.code == Code.NAN_INF:
            rerun = _run(client, scenario, input_seed, poison="finite", tally=tally)
            if bool(rerun.isfinite().all()):
                reason = (
                    f"{check.nonfinite} output elements were never written "
                    "(they kept the poison the harness put in freshly allocated memory)"
                )
                return Failure(Code.UNWRITTEN_OUTPUT, reason)
        if check.failure is not None:
            return check.failure
    return None


def _run(
    client: WorkerClient, scenario: Scenario, seed: int, *, poison: str, tally: _Tally
) -> torch.Tensor:
    header, payload = client.request(
        {"op": "run", "scenario": scenario.to_json(), "seed": seed, "poison": poison}
    )
    tally.candidate_s += float(header.get("candidate_s", 0.0))
    meta = header["tensor"]
    if meta["dtype"] not in channel.WIRE_DTYPES:
        raise WorkerFailure(
            Failure(Code.WRONG_DTYPE, f"output dtype {meta['dtype']} is not supported")
        )
    return channel.tensor_from_wire(meta, payload)


def _time(
    target: Target,
    client: WorkerClient,
    scenario: Scenario,
    seed: int,
    result: ScenarioResult,
    tally: _Tally,
) -> None:
    settings = target.timing
    upstreams = [u.name for u in target.upstreams if u.name not in result.unsupported]
    request = {
        "op": "time",
        "scenario": scenario.to_json(),
        "seeds": [
            derive_seed(seed, scenario.id, "time", i) for i in range(target.inputs_per_scenario)
        ],
        "upstreams": upstreams,
        "settings": dataclasses.asdict(settings),
        "rng_seed": derive_seed(seed, scenario.id, "order"),
    }
    timeout = target.limits.call_timeout_s + 2 * settings.time_cap_s
    header, _ = client.request(request, timeout_s=timeout)
    result.times = {name: TimingStats(**st) for name, st in header["stats"].items()}
    for name, busy in header["busy_s"].items():
        if name == "candidate":
            tally.candidate_s += busy
        else:
            tally.upstream_s += busy
    worst = max(result.times.values(), key=lambda st: st.rse)
    if worst.rse >= settings.target_rse:
        result.flags.append(f"timing stopped at {header['stop']} with rse {worst.rse:.2%}")
