"""``kernel_speedup``: the final verdict of the harness, run in the sandbox, as an Inspect score.

Before scoring, the agent's leftover processes are stopped; the verdict comes back on the
harness's own channel and is checked (exit status, schema, kernel hash), see
:mod:`evals.bench.scoring.harness_exec`. Every score records ``isolation``
(:data:`Isolation`): whether a container kept the agent from the scorer, or the local sandbox
did not.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.scorer import Score, Scorer, Target, scorer
from inspect_ai.solver import TaskState
from inspect_ai.util import SandboxEnvironment, sandbox

from evals.bench.config import budget
from evals.bench.config.settings import Isolation, TaskSettings
from evals.bench.scoring.faults import HarnessFault
from evals.bench.scoring.harness_exec import HarnessRun, run_harness
from evals.bench.scoring.metrics import (
    ci_high,
    ci_low,
    fast_1_0,
    fast_1_1,
    geomean_ok,
    rate,
    runs,
    wilson_high,
    wilson_low,
)
from evals.bench.scoring.processes import stop_agent_processes
from evals.bench.scoring.summary import category_geomeans, scenario_rows, upstream_summary
from evals.harness.verdict.record import Verdict

ZERO = {"success": 0.0, "speedup": 0.0, "speedup_vs_fastest": 0.0, "passed": 0.0, "coverage": 0.0}


def score_from_run(run: HarnessRun, upstream: str, extra: dict[str, Any] | None = None) -> Score:
    """Turn a harness run into a score; 0 with the reason when the candidate failed.

    Raises :class:`HarnessFault` when the run failed for the environment's or the harness's
    reasons (its message starts ``environment:`` or ``harness_error:``): Inspect then records
    the sample as an error, which an eval set can retry, never as the agent's failure.

    Values: ``success`` (1 if every scenario is correct), ``speedup`` (geomean vs ``upstream``
    over the scenarios it ran; 0 unless success), ``speedup_vs_fastest``, ``passed`` (fraction
    of scenarios correct) and ``coverage`` (fraction of scenarios ``upstream`` ran).
    """
    meta: dict[str, Any] = {
        "upstream": upstream,
        "kernel_sha256": run.kernel_sha256,
        **(extra or {}),
    }
    if run.fault is not None:
        raise HarnessFault(run.fault)
    if run.verdict is None:
        return Score(value=dict(ZERO), explanation=f"no verdict: {run.error}", metadata=meta)
    verdict = run.verdict
    agg = verdict.aggregates
    ups = upstream_summary(verdict)
    meta |= {  # the metadata is JSON: the verdict's parts in their JSON form
        "scenarios": scenario_rows(verdict),
        "upstreams": ups,
        "categories": category_geomeans(verdict, upstream),
        "flags": list(verdict.flags),
        "provenance": dict(verdict.provenance),
        "seed": verdict.seed,
        "suite": verdict.suite,
        "status": verdict.status,
        "failure": verdict.failure.to_json() if verdict.failure else None,
    }
    passed = agg.passed / agg.scenarios if agg.scenarios else 0.0
    coverage = (ups.get(upstream) or {}).get("coverage", 0.0)
    if not agg.all_correct:
        failures = [
            f"{r.scenario.id}: {r.failure.reason}" for r in verdict.results if r.failure is not None
        ][:5]
        explanation = f"{agg.passed}/{agg.scenarios} scenarios correct; " + "; ".join(failures)
        value = {**ZERO, "passed": passed, "coverage": coverage}
        return Score(value=value, explanation=_noted(verdict, explanation), metadata=meta)
    value = {
        "success": 1.0,
        "speedup": (ups.get(upstream) or {}).get("geomean") or 0.0,
        "speedup_vs_fastest": (ups.get("fastest") or {}).get("geomean") or 0.0,
        "passed": passed,
        "coverage": coverage,
    }
    explanation = (
        f"all {agg.scenarios} scenarios correct; geomean speedup {value['speedup']:.3f}x vs "
        f"{upstream} (coverage {coverage:.0%}), {value['speedup_vs_fastest']:.3f}x vs the "
        "fastest upstream per scenario"
    )
    unsettled = agg.not_converged
    if unsettled:
        meta["not_converged"] = unsettled
        explanation += (
            f"; timing did not converge on {unsettled} scenario(s) even after a re-time "
            "(their figures are less precise)"
        )
    return Score(value=value, explanation=_noted(verdict, explanation), metadata=meta)


def run_isolation(settings: TaskSettings) -> Isolation:
    """What separated the agent from the scorer in this sample: ``container`` or ``local``.

    The task's ``sandbox`` argument says, unless Inspect's ``--sandbox local`` replaced the
    container it names: a sample whose sandbox is Inspect's local one is ``local`` whatever the
    argument.
    """
    if settings.isolation == "local":
        return "local"
    try:
        # the environment behind Inspect's proxy (any sandbox is a SandboxEnvironment)
        live = sandbox().as_type(SandboxEnvironment)  # type: ignore[type-abstract]
    except (ProcessLookupError, ValueError, TypeError):
        return settings.isolation  # no sandbox to look at (a scorer called outside a sample)
    return "local" if type(live).__name__ == "LocalSandboxEnvironment" else settings.isolation


def _noted(verdict: Verdict, explanation: str) -> str:
    """The explanation, led by the device's note where it has one (a dry run's)."""
    device = verdict.provenance.get("device") or {}
    note = device.get("note") if isinstance(device, dict) else None
    return f"[{note}] {explanation}" if note else explanation


@scorer(
    metrics={
        "success": [rate(), wilson_low(), wilson_high(), runs()],
        "speedup": [
            geomean_ok(),
            ci_low(),
            ci_high(),
            fast_1_0(),
            fast_1_1(),
        ],
        "speedup_vs_fastest": [geomean_ok(), fast_1_0()],
        "passed": [rate()],
        "coverage": [rate()],
    }
)
def kernel_speedup() -> Scorer:
    """Score the final kernel with the harness's ``score`` (score suite, secret seed).

    Metrics see every epoch (see :mod:`evals.bench.scoring.metrics`): success rate with a Wilson
    interval, the geomean speedup over successful runs with a t interval, fast_1.0/fast_1.1.
    The metadata records the budgets spent (``budget``), the processes stopped and the run's
    ``isolation`` (:func:`run_isolation`).
    """

    async def score(state: TaskState, target: Target) -> Score:
        settings = TaskSettings.from_json(state.metadata["settings"])
        isolation = run_isolation(settings)
        stopped = await stop_agent_processes(container=isolation == "container")
        run = await run_harness(
            settings, "score", suite=settings.score_suite, timeout=settings.score_timeout
        )
        extra = {"isolation": isolation, "stopped_processes": stopped, "budget": budget.report()}
        return score_from_run(run, settings.upstream, extra)

    return score
