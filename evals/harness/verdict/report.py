"""Human-readable output: progress lines while running, the results table at the end."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from evals.harness.measurement.device_lock import LockRecord
from evals.harness.verdict.record import ScenarioResult, Verdict, aggregates
from evals.targets import target_folder


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def progress_line(done: int, total: int, result: ScenarioResult) -> str:
    """One line per finished scenario, for long runs: its status and figures so far."""
    status = "ok" if result.correct else f"FAIL {result.failure.code if result.failure else ''}"
    cand = result.times.get("candidate")
    tail = f" {cand.median_us:.1f} us" if cand else ""
    speeds = _speedups(result)
    if cand and speeds:
        tail += "; " + speeds
    return f"[{done}/{total}] {result.scenario.id}: {status}{tail}"


def _speedups(result: ScenarioResult) -> str:
    names = [name for name in result.times if name != "candidate"]
    if names and result.timing.get("unverified"):
        return "speedups withheld (times unverified)"
    return ", ".join(f"{name} {result.speedup(name):.3f}x" for name in names)


@dataclass
class ProgressPrinter:
    """Prints each scenario's progress once, then only what is new about it.

    The harness reports a scenario when the candidate's side is judged and again when its
    upstreams are timed (and when a later check fails it); the second report adds the
    speedups or the failure, never the whole line again.
    """

    stream: TextIO = field(default_factory=lambda: sys.stderr)
    said: dict[str, str] = field(default_factory=dict)

    def __call__(self, done: int, total: int, result: ScenarioResult) -> None:
        """Print what ``result`` adds to what was said about its scenario (nothing: no line)."""
        key = result.scenario.id
        before = self.said.get(key)
        status = "ok" if result.correct else "FAIL"
        if before != status:  # first news of it, or a later check failed it
            line = progress_line(done, total, result)
        elif result.correct and _speedups(result):
            line = f"[{done}/{total}] {key}: {_speedups(result)} (upstreams timed)"
        else:
            return
        self.said[key] = status
        print(line, file=self.stream, flush=True)


def _phase_line(timing: dict[str, float]) -> list[str]:
    """Where the wall time went by phase (seconds), as far as the verdict recorded it."""
    names = {
        "prepare_s": "prepare",
        "static_checks_s": "static checks",
        "start_s": "worker start",
        "setup_s": "setup",
        "verify_s": "verify",
        "probe_s": "probe",
        "time_s": "time",
        "time_loop_s": "of which timing loops",
        "time_upstreams_s": "upstreams (after the candidate's process ended)",
        "wall_clock_s": "wall-clock check",
        "trace_s": "trace",
    }
    parts = [f"{label} {timing[key]:.1f} s" for key, label in names.items() if timing.get(key)]
    return ["phases: " + ", ".join(parts)] if parts else []


def render(verdict: Verdict) -> str:
    """The report: the table, what its columns mean, a summary, grouped notes and failures."""
    lines = [
        f"{verdict.command} {verdict.target} suite={verdict.suite} "
        f"kernel={verdict.kernel.get('path')} seed={verdict.seed}"
    ]
    device_note = (verdict.provenance.get("device") or {}).get("note")
    if device_note:  # e.g. fa4_blackwell's Hopper dry run: no figure below is a Blackwell one
        lines.append(f"NOTE: {device_note}")
    if verdict.failure is not None:  # nothing was judged: say why once, with the log
        word = "ERROR" if verdict.status == "error" else "FAILED"
        lines.append(f"{word} [{verdict.failure.code}] {verdict.failure.reason}")
        if verdict.results:
            lines.append(f"(all {len(verdict.results)} scenarios count as failed)")
        if verdict.build and verdict.build.get("log"):
            lines.append(str(verdict.build["log"]))
        return "\n".join(lines + protections_line(verdict.protections))
    ups = list(verdict.upstreams)
    with_latency = any(r.latency for r in verdict.results)
    lines += _table(verdict.results, ups, with_latency)
    gpu = target_folder(verdict.target).bench["device"] == "gpu"
    lines += legend(ups, with_latency=with_latency, gpu=gpu)
    lines.append(summary(verdict))
    lines += _timing_lines(verdict.timing, verdict.lock, verdict.check_lock)
    lines += protections_line(verdict.protections)
    lines += _failure_lines(verdict.results)
    lines += notes(verdict.results) + [f"note: {flag}" for flag in verdict.flags]
    return "\n".join(lines)


def _table(results: list[ScenarioResult], ups: list[str], with_latency: bool) -> list[str]:
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
    for r in results:
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
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]


def legend(ups: list[str], *, with_latency: bool, gpu: bool) -> list[str]:
    """One line per column: what it holds and in which unit."""
    time = (
        "median time of one call in microseconds, device time (host work hidden)"
        if gpu
        else "time of one call in microseconds on the harness's own clock (back to back)"
    )
    lines = [
        "columns:",
        "  ok       yes if the scenario passed every check",
        "  max_err  largest absolute error against the float64 reference",
        "  tol      the error allowed there: 2x the baseline upstream's, plus a small floor;",
        "           as large as the values are (drawn inputs reach 2^86, so can both figures)",
        f"  *_us     {time}",
        "  x_UP     speedup over upstream UP: above 1 the candidate is faster",
        "  tflops   the candidate's arithmetic rate, TFLOP/s",
    ]
    if with_latency:
        lines.append("  *_lat_us call latency with the host's issue work, for reference only")
    return lines


def summary(verdict: Verdict) -> str:
    """One line saying what the result means."""
    agg = aggregates(verdict.results, list(verdict.upstreams))
    n, passed = agg["scenarios"], agg["passed"]
    ups = list(verdict.upstreams)
    geo = agg["geomean_speedup"]
    parts = []
    for up in ups if len(ups) > 1 else ups[:1]:
        value = geo.get(up)
        if value:
            who = "the candidate" if value >= 1 else up
            factor = value if value >= 1 else 1 / value
            parts.append(f"{value:.2f}x {up} ({who} is {factor:.1f}x faster)")
    if len(ups) > 1 and geo.get("fastest"):
        parts.append(f"{geo['fastest']:.2f}x the fastest upstream per scenario")
    speed = f"; geomean over {agg['study_scenarios']} study scenarios " + ", ".join(parts)
    speed = speed if parts else ""
    con = agg["contract"]
    if con["scenarios"]:
        con_geo = con["geomean_speedup"].get(ups[0]) if ups else None
        con_speed = f", {con_geo:.2f}x {ups[0]} apart from the headline" if con_geo else ""
        speed += f"; {con['scenarios']} contract scenarios ({con['drawn']} drawn){con_speed}"
    if passed == n and n:
        return f"summary: all {n} correct{speed}"
    tail = f"{speed} (correct ones only)" if speed else ""
    return f"summary: {passed} of {n} correct, so the kernel does not pass{tail}"


def protections_line(protections: Mapping[str, Any] | None) -> list[str]:
    """One line: what protected the candidate's process (none when no worker started)."""
    if not protections:
        return []
    extra = []
    if protections.get("no_new_privs"):
        extra.append("no new privileges")
    if protections.get("core_dumps") is False:
        extra.append("no core dumps")
    if protections.get("ptrace") in ("dropped", "not held"):
        extra.append("no CAP_SYS_PTRACE")
    limit = protections.get("memory_limit_bytes")
    extra.append(f"memory limit {limit / 2**30:.1f} GiB" if limit else "no memory limit")
    if protections.get("environment"):
        extra.append(f"environment {protections['environment']}")
    return [f"sandbox: seccomp {protections.get('seccomp', 'unknown')} | " + ", ".join(extra)]


def _timing_lines(
    t: dict[str, float], lock: LockRecord | None, shared: LockRecord | None = None
) -> list[str]:
    """Where the wall time went; waiting for another run's device lock is its own term.

    ``shared``: a GPU run's hold of the lock for its checks, beside other runs' checks.
    """
    if not t:
        return []
    waited = sum(record.waited_s for record in (lock, shared) if record is not None)
    known = t["build_s"] + t["candidate_calls_s"] + t["upstream_calls_s"] + t["reference_s"]
    wait = f" + waiting for the device lock {waited:.1f} s" if waited >= 0.05 else ""
    line = (
        f"time: wall {t['wall_s']:.1f} s = build {t['build_s']:.1f} s + candidate calls "
        f"{t['candidate_calls_s']:.1f} s + upstream calls {t['upstream_calls_s']:.1f} s + "
        f"reference checks {t['reference_s']:.1f} s{wait} + other "
        f"{t['wall_s'] - known - waited:.1f} s"
    )
    return [line, *_phase_line(t), *_hold_line(lock, shared)]


def _hold_line(lock: LockRecord | None, shared: LockRecord | None) -> list[str]:
    """How long the device's lock was held shared (checks) and alone (measuring)."""
    if shared is None or lock is None:
        return []
    holds = [shared.held_s, lock.held_s]
    return [f"device lock: held shared for checks {holds[0]:.1f} s, alone {holds[1]:.1f} s"]


def _failure_lines(results: list[ScenarioResult]) -> list[str]:
    """Each distinct failure once, with the scenarios it hit."""
    groups: dict[tuple[str, str], list[str]] = {}
    for r in results:
        if r.failure is not None:
            groups.setdefault((r.failure.code, r.failure.reason), []).append(r.scenario.id)
    lines = []
    for (code, reason), ids in groups.items():
        where = ids[0] if len(ids) == 1 else f"{len(ids)} scenarios ({_ids(ids)})"
        lines.append(f"  {where}: [{code}] {reason}")
    return lines


_NOT_CONVERGED = re.compile(r"^timing did not converge.*rse ([0-9.]+)%")
_POLLUTED = re.compile(r"^(\d+) timed call\(s\) of (\S+) discarded")


def notes(results: list[ScenarioResult]) -> list[str]:
    """The scenarios' notes, grouped by kind and each kind explained once."""
    slow: dict[str, None] = {}  # each scenario once (the candidate's and upstreams' timing)
    rse, polluted, other = 0.0, 0, []
    for r in results:
        for flag in r.flags:
            if m := _NOT_CONVERGED.match(flag):
                slow[r.scenario.id] = None
                rse = max(rse, float(m.group(1)))
            elif m := _POLLUTED.match(flag):
                polluted += int(m.group(1))
            else:
                other.append(f"  {r.scenario.id}: note: {flag}")
    lines = []
    if slow:
        lines.append(
            f"note: timing did not converge on {len(slow)} scenario(s) even after a re-time "
            f"(rse up to {rse:.1f}%): their times are less precise, not wrong "
            f"({_ids(list(slow))})"
        )
    if polluted:
        lines.append(
            f"note: {polluted} timed call(s) were discarded and re-timed with a longer spin "
            "(the host's issue work outlasted it); the figures exclude them"
        )
    return lines + other


def _ids(ids: list[str], limit: int = 4) -> str:
    return ", ".join(ids[:limit]) + (f", ... {len(ids) - limit} more" if len(ids) > limit else "")
