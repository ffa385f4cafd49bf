"""``kernel_speedup``: the final verdict of the harness, run in the sandbox, as an Inspect score."""

from __future__ import annotations

from typing import Any

from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import TaskState

from evals.bench.harness_exec import HarnessRun, run_harness
from evals.bench.metrics import ci_lower, ci_upper, geometric_mean
from evals.bench.settings import TaskSettings

ZERO = {"speedup": 0.0, "speedup_vs_fastest": 0.0, "correct": 0.0, "passed": 0.0}


def _scenario_rows(verdict: dict[str, Any]) -> list[dict[str, Any]]:
    """Compact per-scenario results for the score's metadata."""
    rows = []
    for sc in verdict.get("scenarios", []):
        cand = sc.get("times_us", {}).get("candidate")
        rows.append(
            {
                "id": sc["id"],
                "correct": sc["correct"],
                "failure": sc.get("failure"),
                "speedup": sc.get("speedup"),
                "candidate_us": cand["median_us"] if cand else None,
                "errors": sc.get("errors"),
                "flags": sc.get("flags"),
            }
        )
    return rows


def score_from_run(run: HarnessRun, upstream: str) -> Score:
    """Turn a harness run into a score; 0 with the reason when anything failed."""
    if run.verdict is None:
        return Score(value=dict(ZERO), explanation=f"no verdict: {run.error}")
    verdict = run.verdict
    agg = verdict["aggregates"]
    meta = {
        "scenarios": _scenario_rows(verdict),
        "flags": verdict.get("flags"),
        "provenance": verdict.get("provenance"),
        "seed": verdict.get("seed"),
        "status": verdict.get("status"),
        "failure": verdict.get("failure"),
    }
    passed = agg["passed"] / agg["scenarios"] if agg["scenarios"] else 0.0
    if not agg["all_correct"]:
        failures = [
            f"{s['id']}: {s['failure']['reason']}" for s in verdict["scenarios"] if s.get("failure")
        ][:5]
        explanation = f"{agg['passed']}/{agg['scenarios']} scenarios correct; " + "; ".join(
            failures
        )
        return Score(value={**ZERO, "passed": passed}, explanation=explanation, metadata=meta)
    geo = agg["geomean_speedup"]
    value = {
        "speedup": geo.get(upstream) or 0.0,
        "speedup_vs_fastest": geo.get("fastest") or 0.0,
        "correct": 1.0,
        "passed": passed,
    }
    explanation = (
        f"all {agg['scenarios']} scenarios correct; geomean speedup "
        f"{value['speedup']:.3f}x vs {upstream}, {value['speedup_vs_fastest']:.3f}x "
        "vs the fastest upstream per scenario"
    )
    return Score(value=value, explanation=explanation, metadata=meta)


@scorer(
    metrics={
        "speedup": [mean(), stderr(), ci_lower(), ci_upper(), geometric_mean()],
        "speedup_vs_fastest": [mean(), geometric_mean()],
        "correct": [mean()],
        "passed": [mean()],
    }
)
def kernel_speedup() -> Scorer:
    """Score the final kernel with the harness's ``score`` (score suite, secret seed).

    Value: ``speedup`` (geomean vs the task's upstream; 0 if any scenario fails),
    ``speedup_vs_fastest``, ``correct`` (0/1) and ``passed`` (fraction of scenarios).
    """

    async def score(state: TaskState, target: Target) -> Score:
        settings = TaskSettings.from_json(state.metadata["settings"])
        run = await run_harness(
            settings, "score", suite=settings.score_suite, timeout=settings.score_timeout
        )
        return score_from_run(run, settings.upstream)

    return score
