"""Merging a worker's timing answer into a scenario's result: figures, convergence, notes."""

from __future__ import annotations

from typing import Any

from evals.harness.measurement.timing import TimingSettings, TimingStats
from evals.harness.verdict.record import ScenarioResult
from evals.harness.worker_link.session import Session


def record_timing(
    session: Session, result: ScenarioResult, header: dict[str, Any], *, attempts: int
) -> None:
    """The candidate's device times, latencies, issue times and how its timing went."""
    result.times, result.latency, result.issue = {}, {}, {}
    result.timing = {
        "trials": int(header["trials"]),
        "stop": header["stop"],
        "attempts": attempts,
        "converged": True,
        "polluted": {},
    }
    add_figures(session, result, header, who="the candidate's timing", attempts=attempts)


def settled(header: dict[str, Any], settings: TimingSettings) -> bool:
    """Whether a worker's timing round is kept without a second round on fresh inputs.

    A converged round is; so is one that stopped on its cap with every implementation's
    relative standard error within ``settings.accept_rse`` (a slow CPU kernel's five to ten
    trials rarely reach 0.5%, and a second round doubled the scenario's timing for a median
    already known to a few percent). The figures' note still says it did not converge.
    """
    if header["stop"] == "converged":
        return True
    stats = [TimingStats(**st) for st in header["stats"].values()]
    accept = settings.accept_rse
    return accept > 0 and bool(stats) and max(st.rse for st in stats) <= accept


def flag_suspicious(result: ScenarioResult, *, threshold: float) -> None:
    """A note for a person on each speedup over ``threshold``, from the figures that count."""
    for name in result.times:
        speedup = result.speedup(name) if name != "candidate" else None
        if speedup is not None and speedup > threshold:
            result.flags.append(f"suspicious: {speedup:.2f}x over {name}; worth a look")


def add_figures(
    session: Session,
    result: ScenarioResult,
    header: dict[str, Any],
    *,
    who: str,
    attempts: int | None,
) -> None:
    """Merge one worker's timing answer into the result: stats, convergence, discarded calls."""
    parts = ((result.times, "stats"), (result.latency, "latency"), (result.issue, "issue"))
    for into, key in parts:
        into.update({name: TimingStats(**st) for name, st in header.get(key, {}).items()})
    timing = result.timing
    worker = {name: float(st["median_us"]) for name, st in header.get("worker_stats", {}).items()}
    # a re-time's figures on the parent's clock (evals.harness.clock_checks.parent_figure)
    if worker:
        timing["worker_us"] = {**timing.get("worker_us", {}), **worker}
    timing["converged"] = timing.get("converged", True) and header["stop"] == "converged"
    timing["worst_rse"] = max(st.rse for st in result.times.values())
    timing["polluted"] = {
        **timing.get("polluted", {}),
        **{k: v for k, v in header.get("polluted", {}).items() if v},
    }
    # the first call of the timing process whose figures are reported (a JIT compile's cost)
    timing["first_call_ms"] = {**timing.get("first_call_ms", {}), **header.get("first_call_ms", {})}
    if session.target.device == "cuda":  # the CPU has no spin: device time is wall time
        timing["spin_us"] = {**timing.get("spin_us", {}), **header.get("spin_us", {})}
    _timing_flags(session, result, header, who=who, attempts=attempts)


def _timing_flags(
    session: Session,
    result: ScenarioResult,
    header: dict[str, Any],
    *,
    who: str,
    attempts: int | None,
) -> None:
    """Notes on one worker's timing: not converged, or calls discarded for host work."""
    if header["stop"] != "converged":
        own = {**header["stats"], **header.get("worker_stats", {})}  # the worker's convergence
        worst = max(TimingStats(**st).rse for st in own.values())
        rounds = f" in {attempts} attempts" if attempts else ""
        result.flags.append(
            f"timing did not converge{rounds} ({who} stopped at {header['stop']}): "
            f"rse {worst:.2%} over the target {session.target.timing.target_rse:.2%}; "
            "its figures are less precise"
        )
    for name, n in header.get("polluted", {}).items():
        if n:
            result.flags.append(
                f"{n} timed call(s) of {name} discarded: host issue work outlasted the spin"
            )
