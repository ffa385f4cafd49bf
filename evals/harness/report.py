"""Human-readable output: progress lines while running, the results table at the end."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from evals.harness.verdict import ScenarioResult, Verdict, aggregates


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def progress_line(done: int, total: int, result: ScenarioResult) -> str:
    """One line per finished scenario, for long runs."""
    status = "ok" if result.correct else f"FAIL {result.failure.code if result.failure else ''}"
    cand = result.times.get("candidate")
    speeds = [f"{name} {result.speedup(name):.3f}x" for name in result.times if name != "candidate"]
    tail = f" {cand.median_us:.1f} us; " + ", ".join(speeds) if cand else ""
    return f"[{done}/{total}] {result.scenario.id}: {status}{tail}"


def print_progress(
    done: int, total: int, result: ScenarioResult, stream: TextIO = sys.stderr
) -> None:
    """Write :func:`progress_line` to ``stream`` and flush."""
    print(progress_line(done, total, result), file=stream, flush=True)


def _phase_line(timing: dict[str, float]) -> list[str]:
    """Where the wall time went by phase (seconds), as far as the verdict recorded it."""
    names = {
        "setup_s": "setup",
        "verify_s": "verify",
        "probe_s": "probe",
        "time_s": "time",
        "time_loop_s": "of which timing loops",
        "trace_s": "trace",
    }
    parts = [f"{label} {timing[key]:.1f} s" for key, label in names.items() if timing.get(key)]
    return ["phases: " + ", ".join(parts)] if parts else []


def render(verdict: Verdict) -> str:
    """The results table: per scenario correctness, error, times, speedups; then geomeans."""
    lines = [
        f"{verdict.command} {verdict.target} suite={verdict.suite} "
        f"kernel={verdict.kernel.get('path')} seed={verdict.seed}"
    ]
    if verdict.failure is not None and not verdict.results:
        lines.append(f"ERROR [{verdict.failure.code}] {verdict.failure.reason}")
        return "\n".join(lines)
    ups = list(verdict.upstreams)
    with_latency = any(r.latency for r in verdict.results)
    names = ["candidate", *ups] if with_latency else []
    header = [
        "scenario",
        "ok",
        "max_err",
        "tol",
        "cand_us",
        *(f"{u}_us" for u in ups),
        *(f"x_{u}" for u in ups),
        "tflops",
        *(f"{'cand' if n == 'candidate' else n}_lat_us" for n in names),
    ]
    rows = [header]
    for r in verdict.results:
        cand = r.times.get("candidate")
        data: dict[str, Any] = r.to_json()
        rows.append(
            [
                r.scenario.id,
                "yes" if r.correct else "NO",
                _fmt(r.errors.get("max_abs"), ".2e"),
                _fmt(r.errors.get("tolerance"), ".2e"),
                _fmt(cand.median_us if cand else None, ".1f"),
                *(_fmt(r.times[u].median_us if u in r.times else None, ".1f") for u in ups),
                *(_fmt(r.speedup(u), ".3f") for u in ups),
                _fmt(data["tflops"], ".3f"),
                *(_fmt(r.latency[n].median_us if n in r.latency else None, ".1f") for n in names),
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))
    agg = aggregates(verdict.results, ups)
    geo = ", ".join(f"{k} {_fmt(v, '.3f')}x" for k, v in agg["geomean_speedup"].items())
    lines.append(f"passed {agg['passed']}/{agg['scenarios']}; geomean speedup: {geo}")
    if with_latency:
        lines.append(
            "times (_us) are device time, host issue work hidden, and speedups use them; "
            "_lat_us is call latency (host work included), for reference only"
        )
    if agg["not_converged"]:
        lines.append(
            f"timing did not converge on {agg['not_converged']} scenario(s) after a re-time: "
            "their figures are less precise (see the notes)"
        )
    t = verdict.timing
    if t:
        inside = t["candidate_calls_s"] + t["upstream_calls_s"]
        lines.append(
            f"time: wall {t['wall_s']:.1f} s = build {t['build_s']:.1f} s + candidate calls "
            f"{t['candidate_calls_s']:.1f} s + upstream calls {t['upstream_calls_s']:.1f} s + "
            f"reference checks {t['reference_s']:.1f} s + other "
            f"{t['wall_s'] - t['build_s'] - inside - t['reference_s']:.1f} s"
        )
        lines.extend(_phase_line(t))
    for r in verdict.results:
        if r.failure is not None:
            lines.append(f"  {r.scenario.id}: [{r.failure.code}] {r.failure.reason}")
        for flag in r.flags:
            lines.append(f"  {r.scenario.id}: note: {flag}")
    if verdict.failure is not None:
        lines.append(f"FAILED [{verdict.failure.code}] {verdict.failure.reason}")
        if verdict.build and verdict.build.get("log"):
            lines.append(str(verdict.build["log"]))
    return "\n".join(lines)
