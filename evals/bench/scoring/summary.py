"""Summaries of a verdict for the score: per-upstream geomeans with coverage, per-category.

Every upstream is scored on the full suite. Where an upstream cannot run a scenario (the
verdict's ``unsupported``; e.g. cuDNN through SDPA has no fp8 or KV-cache path), that scenario
has no speedup against it: the upstream's geomean is defined over the scenarios it ran, and its
``coverage`` (scenarios it ran / scenarios in the suite) is reported beside it. ``fastest`` is
the fastest upstream that ran each scenario. Contract scenarios (``"contract": true``: fixed
in the suite or drawn from the run's seed) gate correctness but leave the speed figures: the
geomeans and coverage are over the study scenarios, and contract ones are one category,
``contract``.
"""

from __future__ import annotations

from typing import Any

from evals.harness.verdict.record import ScenarioResult, Verdict
from evals.stats import geomean


def _category(result: ScenarioResult) -> str:
    if result.scenario.contract:
        return "contract"
    return str(result.scenario.params.get("category") or result.scenario.id.split("-")[0])


def upstream_summary(verdict: Verdict) -> dict[str, dict[str, Any]]:
    """Per upstream (and ``fastest``): geomean over the scenarios it ran, and its coverage.

    ``coverage`` is the share of the suite's scenarios the upstream supports (not listed in a
    scenario's ``unsupported``), whatever the candidate did; ``scenarios`` counts the
    speedups in the geomean (scenarios it supports where the candidate was timed).
    """
    study = [r for r in verdict.results if not r.scenario.contract]
    speedups = [r.speedups() for r in study]
    names = [*verdict.upstreams, "fastest"]
    for found in speedups:
        names += [u for u in found if u not in names]
    total = len(study)
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        ran = [v for found in speedups if (v := found.get(name))]
        supported = sum(1 for r in study if name == "fastest" or name not in r.unsupported)
        out[name] = {
            "geomean": geomean(ran),
            "coverage": supported / total if total else 0.0,
            "scenarios": len(ran),
        }
    return out


def category_geomeans(verdict: Verdict, upstream: str) -> dict[str, float | None]:
    """Geomean speedup vs ``upstream`` per scenario category (scenarios it ran)."""
    cats: dict[str, list[float]] = {}
    for r in verdict.results:
        cats.setdefault(_category(r), [])
        value = r.speedups().get(upstream)
        if value:
            cats[_category(r)].append(float(value))
    return {c: geomean(v) for c, v in sorted(cats.items())}


def scenario_rows(verdict: Verdict) -> list[dict[str, Any]]:
    """Compact per-scenario results for the score's metadata (JSON values)."""
    rows = []
    for r in verdict.results:
        cand = r.times.get("candidate")
        rows.append(
            {
                "id": r.scenario.id,
                "category": _category(r),
                "correct": r.correct,
                "failure": r.failure.to_json() if r.failure else None,
                "speedup": r.speedups(),
                "unsupported": dict(r.unsupported) or None,
                "candidate_us": cand.median_us if cand else None,
                "errors": dict(r.errors),
                "flags": list(r.flags),
            }
        )
    return rows
