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

from evals.stats import geomean


def _category(scenario: dict[str, Any]) -> str:
    if scenario.get("contract"):
        return "contract"
    params = scenario.get("params") or {}
    return str(params.get("category") or scenario["id"].split("-")[0])


def upstream_summary(verdict: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per upstream (and ``fastest``): geomean over the scenarios it ran, and its coverage.

    ``coverage`` is the share of the suite's scenarios the upstream supports (not listed in a
    scenario's ``unsupported``), whatever the candidate did; ``scenarios`` counts the
    speedups in the geomean (scenarios it supports where the candidate was timed).
    """
    scenarios = [s for s in verdict.get("scenarios", []) if not s.get("contract")]
    names = [*(verdict.get("upstreams") or {}), "fastest"]
    for s in scenarios:
        names += [u for u in (s.get("speedup") or {}) if u not in names]
    total = len(scenarios)
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        ran = [v for s in scenarios if (v := (s.get("speedup") or {}).get(name))]
        supported = sum(
            1 for s in scenarios if name == "fastest" or name not in (s.get("unsupported") or {})
        )
        out[name] = {
            "geomean": geomean(ran),
            "coverage": supported / total if total else 0.0,
            "scenarios": len(ran),
        }
    return out


def category_geomeans(verdict: dict[str, Any], upstream: str) -> dict[str, float | None]:
    """Geomean speedup vs ``upstream`` per scenario category (scenarios it ran)."""
    cats: dict[str, list[float]] = {}
    for s in verdict.get("scenarios", []):
        cats.setdefault(_category(s), [])
        value = (s.get("speedup") or {}).get(upstream)
        if value:
            cats[_category(s)].append(float(value))
    return {c: geomean(v) for c, v in sorted(cats.items())}


def scenario_rows(verdict: dict[str, Any]) -> list[dict[str, Any]]:
    """Compact per-scenario results for the score's metadata."""
    rows = []
    for sc in verdict.get("scenarios", []):
        cand = (sc.get("times_us") or {}).get("candidate")
        rows.append(
            {
                "id": sc["id"],
                "category": _category(sc),
                "correct": sc["correct"],
                "failure": sc.get("failure"),
                "speedup": sc.get("speedup"),
                "unsupported": sc.get("unsupported") or None,
                "candidate_us": cand["median_us"] if cand else None,
                "errors": sc.get("errors"),
                "flags": sc.get("flags"),
            }
        )
    return rows
