"""The verdict: per-scenario results, aggregates, provenance and flags; its versioned JSON."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from evals.harness.failures import Failure
from evals.harness.measurement.device_lock import LockRecord
from evals.harness.measurement.timing import TimingStats
from evals.harness.scenarios import Scenario

VERDICT_SCHEMA = "kernelseek.verdict/1"
Status = Literal["ok", "failed", "error"]
EXIT_STATUS: dict[Status, int] = {"ok": 0, "failed": 1, "error": 2}
"""The exit status of a harness run ending with each verdict status (the CLI's, and what a
relay's caller holds the verdict to)."""


@dataclass
class ScenarioResult:
    """Outcome of one scenario.

    Attributes:
        scenario: The scenario.
        correct: Whether every checked output passed.
        failure: The first failure, or None.
        errors: Worst-case error figures over the checked input sets.
        times: Device-time stats per implementation (``candidate`` and upstream names): the
            headline every speedup, geomean and floor uses. On a CPU target they are the
            parent's figures (:mod:`evals.harness.clock_checks.parent_figure`; ``timing['figure']``
            is ``parent``, ``median_us`` the fastest batch's time per call, with the batch's flips
            and digests left in on a small call: ``timing['figure_from']``), and the worker's own
            medians are in ``timing['worker_us']``.
        latency: Call-latency stats per implementation (host issue work included, as a
            caller sees it; display only, empty where it equals device time).
        issue: Host issue-time stats per implementation (the call's own host work).
        timing: How the timing went: trials, why it stopped, attempts, whether it
            converged, calls discarded as polluted and the final spin per implementation;
            ``wall_us``: the candidate's time per call on the parent's own clock (back-to-back
            calls, microseconds) and ``wall`` the figures behind it
            (:mod:`evals.harness.clock_checks.wall_check`); ``unverified``: why the parent's clock
            could not confirm the candidate's times on a contract scenario (its speedups are then
            withheld: None).
        unsupported: Upstream name to why it cannot run this scenario.
        flops: FLOPs of one call; bytes: bytes moved by one call.
        floor_us: The roofline floor the candidate time was checked against (GPU targets).
        memory: Peak GPU memory reserved in this scenario by the worker and by the harness
            process (GiB; GPU targets).
        flags: Notes for a reader (e.g. timing did not converge).
        checks: Each integrity check that ran on this scenario and what it found
            (``passed: ...``, ``failed``, ``skipped: why``; the CPU's ``round_audit`` may
            also say ``scaled: ...`` and, on a contract scenario, ``not counted ...``).
        seconds: Wall seconds of each phase of judging it (``verify``, ``probe``, ``time``),
            and parts of ``time``: the worker's request (``time_worker``), its timing loop
            with warm-up (``time_loop``), the check of the timed outputs (``time_check``) and
            the parent's clock on batches of calls (``wall_clock``).

    """

    scenario: Scenario
    correct: bool = False
    failure: Failure | None = None
    errors: dict[str, float] = field(default_factory=dict)
    times: dict[str, TimingStats] = field(default_factory=dict)
    latency: dict[str, TimingStats] = field(default_factory=dict)
    issue: dict[str, TimingStats] = field(default_factory=dict)
    timing: dict[str, Any] = field(default_factory=dict)
    unsupported: dict[str, str] = field(default_factory=dict)
    flops: float = 0.0
    bytes: float = 0.0
    floor_us: float | None = None
    memory: dict[str, float] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    checks: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def speedup(self, upstream: str) -> float | None:
        """Upstream median over candidate median, or None when either is missing.

        None too where the candidate's times are unverified (``timing['unverified']``).
        """
        cand, up = self.times.get("candidate"), self.times.get(upstream)
        if self.timing.get("unverified") or cand is None or up is None or cand.median_us <= 0:
            return None
        return up.median_us / cand.median_us

    def fastest_upstream(self) -> str | None:
        """The upstream with the lowest median time on this scenario."""
        ups = {k: v for k, v in self.times.items() if k != "candidate"}
        return min(ups, key=lambda k: ups[k].median_us) if ups else None

    def speedups(self) -> dict[str, float | None]:
        """:meth:`speedup` vs each timed upstream, and vs the fastest of them (``fastest``).

        The JSON form's ``speedup``: upstream median over candidate median (dimensionless);
        an upstream that was not timed has no key, one whose speedup is withheld has None.
        """
        speedups = {k: self.speedup(k) for k in self.times if k != "candidate"}
        fastest = self.fastest_upstream()
        if fastest is not None:
            speedups["fastest"] = self.speedup(fastest)
        return speedups

    def to_json(self) -> dict[str, Any]:
        """JSON form, with TFLOP/s and GB/s of the candidate."""
        cand = self.times.get("candidate")
        fastest = self.fastest_upstream()
        speedups = self.speedups()
        return {
            **self.scenario.to_json(),
            "correct": self.correct,
            "failure": self.failure.to_json() if self.failure else None,
            "errors": self.errors,
            "times_us": {k: v.to_json() for k, v in self.times.items()},
            "latency_us": {k: v.to_json() for k, v in self.latency.items()},
            "issue_us": {k: v.to_json() for k, v in self.issue.items()},
            "timing": self.timing,
            "speedup": speedups,
            "fastest_upstream": fastest,
            "unsupported": self.unsupported,
            "tflops": self.flops / cand.median_us / 1e6 if cand else None,
            "gbps": self.bytes / cand.median_us / 1e3 if cand else None,
            "flops": self.flops,
            "bytes": self.bytes,
            "floor_us": self.floor_us,
            "memory": self.memory,
            "flags": self.flags,
            "checks": self.checks,
            "seconds": self.seconds,
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> ScenarioResult:
        """Read :meth:`to_json`'s form back (derived figures such as speedups are recomputed).

        Raises:
            KeyError, TypeError, ValueError: ``raw`` is not such a form.
        """
        failure = raw.get("failure")

        def stats(key: str) -> dict[str, TimingStats]:
            return {name: TimingStats(**st) for name, st in (raw.get(key) or {}).items()}

        scenario = Scenario(
            str(raw["id"]),
            dict(raw["params"]),
            contract=bool(raw.get("contract", False)),
            drawn=bool(raw.get("drawn", False)),
            covering=bool(raw.get("covering", False)),
        )
        times = stats("times_us")
        cand = times.get("candidate")
        work = {"flops": raw.get("flops"), "bytes": raw.get("bytes")}
        if work["flops"] is None and cand is not None:  # written before they were (2026-12-05)
            work = {
                "flops": (raw.get("tflops") or 0.0) * cand.median_us * 1e6,
                "bytes": (raw.get("gbps") or 0.0) * cand.median_us * 1e3,
            }
        return cls(
            scenario=scenario,
            correct=bool(raw["correct"]),
            failure=Failure.from_json(failure) if failure else None,
            errors=dict(raw.get("errors") or {}),
            times=times,
            latency=stats("latency_us"),
            issue=stats("issue_us"),
            timing=dict(raw.get("timing") or {}),
            unsupported=dict(raw.get("unsupported") or {}),
            flops=float(work["flops"] or 0.0),
            bytes=float(work["bytes"] or 0.0),
            floor_us=raw.get("floor_us"),
            memory=dict(raw.get("memory") or {}),
            flags=list(raw.get("flags") or []),
            checks=dict(raw.get("checks") or {}),
            seconds=dict(raw.get("seconds") or {}),
        )


def geomean(values: Iterable[float]) -> float | None:
    """Geometric mean of positive values, or None when there are none."""
    vals = [v for v in values if v > 0]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def _geomeans(passed: list[ScenarioResult], upstreams: Iterable[str]) -> dict[str, float | None]:
    """Geomean speedup of ``passed`` vs each upstream and vs the per-scenario fastest."""
    speedups: dict[str, float | None] = {}
    for name in [*upstreams, "fastest"]:
        per = [
            r.speedup(r.fastest_upstream() or "") if name == "fastest" else r.speedup(name)
            for r in passed
        ]
        speedups[name] = geomean(s for s in per if s is not None)
    return speedups


@dataclass(frozen=True)
class ContractAggregates:
    """The contract scenarios' own aggregate (fixed in the suite or drawn from the seed).

    Attributes:
        scenarios: Contract scenarios in the run (count).
        passed: Of them, those correct (count).
        drawn: Of them, those drawn from the run's seed (count).
        geomean_speedup: Geomean speedup (upstream median time over the candidate's,
            dimensionless) of the correct contract scenarios vs each upstream and vs the
            per-scenario fastest (``fastest``); None where no such scenario has one.
    """

    scenarios: int
    passed: int
    drawn: int
    geomean_speedup: dict[str, float | None]

    def to_json(self) -> dict[str, Any]:
        """JSON form: the verdict's ``aggregates.contract``."""
        return {
            "scenarios": self.scenarios,
            "passed": self.passed,
            "drawn": self.drawn,
            "geomean_speedup": dict(self.geomean_speedup),
        }


@dataclass(frozen=True)
class Aggregates:
    """Scenarios passed and geomean speedups vs each upstream and vs the per-scenario fastest.

    Every scenario gates correctness (``passed``, ``all_correct``). The headline
    ``geomean_speedup`` is over the correct, timed study scenarios only (device time); contract
    scenarios have their own aggregate, ``contract``.

    Attributes:
        scenarios: Scenarios in the run, contract ones included (count).
        passed: Scenarios correct (count).
        all_correct: Every scenario correct, and there was at least one.
        study_scenarios: Scenarios that are not contract ones (count).
        geomean_speedup: Geomean speedup (upstream median device time over the candidate's,
            dimensionless) of the correct study scenarios vs each upstream and vs the
            per-scenario fastest (``fastest``); None where no such scenario has one.
        not_converged: Correct study scenarios whose timing missed its target rse after every
            attempt (count; their figures are less precise).
        contract: The contract scenarios' aggregate.
    """

    scenarios: int
    passed: int
    all_correct: bool
    study_scenarios: int
    geomean_speedup: dict[str, float | None]
    not_converged: int
    contract: ContractAggregates

    @classmethod
    def of(cls, results: list[ScenarioResult], upstreams: Iterable[str]) -> Aggregates:
        """The aggregates of ``results`` against ``upstreams`` (names)."""
        upstreams = list(upstreams)
        passed = [r for r in results if r.correct]
        study = [r for r in passed if not r.scenario.contract]
        contract = [r for r in results if r.scenario.contract]
        contract_passed = [r for r in contract if r.correct]
        return cls(
            scenarios=len(results),
            passed=len(passed),
            all_correct=len(passed) == len(results) and bool(results),
            study_scenarios=len(results) - len(contract),
            geomean_speedup=_geomeans(study, upstreams),
            not_converged=sum(1 for r in study if r.timing.get("converged") is False),
            contract=ContractAggregates(
                scenarios=len(contract),
                passed=len(contract_passed),
                drawn=sum(1 for r in contract if r.scenario.drawn),
                geomean_speedup=_geomeans(contract_passed, upstreams),
            ),
        )

    def to_json(self) -> dict[str, Any]:
        """JSON form: the verdict's ``aggregates``."""
        return {
            "scenarios": self.scenarios,
            "passed": self.passed,
            "all_correct": self.all_correct,
            "study_scenarios": self.study_scenarios,
            "geomean_speedup": dict(self.geomean_speedup),
            "not_converged": self.not_converged,
            "contract": self.contract.to_json(),
        }


def aggregates(results: list[ScenarioResult], upstreams: Iterable[str]) -> dict[str, Any]:
    """:class:`Aggregates` of ``results`` in their JSON form (the verdict's ``aggregates``)."""
    return Aggregates.of(results, upstreams).to_json()


@dataclass
class Verdict:
    """Everything a run concluded; ``to_json`` is the published, versioned form."""

    command: str
    target: str
    suite: str
    kernel: dict[str, Any]
    seed: int | None
    status: Status
    failure: Failure | None = None
    build: Mapping[str, Any] | None = None
    results: list[ScenarioResult] = field(default_factory=list)
    upstreams: dict[str, str] = field(default_factory=dict)
    provenance: Mapping[str, Any] = field(default_factory=dict)
    timing: dict[str, float] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    checks: dict[str, str] = field(default_factory=dict)
    lock: LockRecord | None = None
    """The device lock this run held while judging (how long it waited, when it held it);
    on a GPU target, held exclusive while measuring."""
    check_lock: LockRecord | None = None
    """GPU: the same lock held shared while checking, beside other runs' checks."""
    protections: dict[str, Any] | None = None
    """What protected the candidate's worker process: its OS sandbox (``seccomp``: ``active:
    ...``, ``audit: ...``, ``unavailable: why`` or ``off: ...``), no_new_privs, core dumps,
    memory limit and environment (:mod:`evals.harness.sandbox.os_sandbox`); None where no worker
    started."""

    @property
    def aggregates(self) -> Aggregates:
        """The run's aggregates, computed from its scenarios (as :meth:`to_json` writes them)."""
        return Aggregates.of(self.results, self.upstreams)

    def to_json(self) -> dict[str, Any]:
        """The verdict as JSON (schema :data:`VERDICT_SCHEMA`)."""
        return {
            "schema": VERDICT_SCHEMA,
            "command": self.command,
            "target": self.target,
            "suite": self.suite,
            "kernel": dict(self.kernel),
            "seed": self.seed,
            "status": self.status,
            "failure": self.failure.to_json() if self.failure else None,
            "build": dict(self.build) if self.build else None,
            "scenarios": [r.to_json() for r in self.results],
            "aggregates": self.aggregates.to_json(),
            "upstreams": self.upstreams,
            "provenance": dict(self.provenance),
            "timing": self.timing,
            "settings": dict(self.settings),
            "flags": self.flags,
            "checks": self.checks,
            "lock": self.lock.to_json() if self.lock else None,
            "check_lock": self.check_lock.to_json() if self.check_lock else None,
            "protections": self.protections,
        }

    @classmethod
    def from_json(cls, raw: object) -> Verdict:
        """Read :meth:`to_json`'s form back: the one way a saved verdict is read.

        Aggregates are not read: they are recomputed from the scenarios
        (:attr:`aggregates`), as :meth:`to_json` made them.

        Raises:
            ValueError: ``raw`` is not a verdict of schema :data:`VERDICT_SCHEMA` (one line).
        """
        if not isinstance(raw, dict) or raw.get("schema") != VERDICT_SCHEMA:
            found = raw.get("schema") if isinstance(raw, dict) else type(raw).__name__
            raise ValueError(f"not a verdict of schema {VERDICT_SCHEMA}: found {found!r}")
        try:
            return cls._read(raw)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"a malformed verdict: {type(exc).__name__}: {exc}") from exc

    @classmethod
    def _read(cls, raw: dict[str, Any]) -> Verdict:
        failure, lock, check_lock = raw.get("failure"), raw.get("lock"), raw.get("check_lock")
        status = raw["status"]
        if status not in ("ok", "failed", "error"):
            raise ValueError(f"status {status!r}")
        return cls(
            command=str(raw["command"]),
            target=str(raw["target"]),
            suite=str(raw["suite"]),
            kernel=dict(raw.get("kernel") or {}),
            seed=raw.get("seed"),
            status=status,
            failure=Failure.from_json(failure) if failure else None,
            build=raw.get("build"),
            results=[ScenarioResult.from_json(s) for s in raw.get("scenarios") or []],
            upstreams=dict(raw.get("upstreams") or {}),
            provenance=dict(raw.get("provenance") or {}),
            timing=dict(raw.get("timing") or {}),
            settings=dict(raw.get("settings") or {}),
            flags=list(raw.get("flags") or []),
            checks=dict(raw.get("checks") or {}),
            lock=LockRecord.from_json(lock) if lock else None,
            check_lock=LockRecord.from_json(check_lock) if check_lock else None,
            protections=raw.get("protections"),
        )
