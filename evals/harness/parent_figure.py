"""On a CPU target, the time every speedup uses is the parent's, for candidate and upstreams alike.

The worker's own timing loop runs on a clock inside the candidate's process, which a kernel
that took over that process can slow (a C library's clock re-pointed for its own process
scored 1.38x and 1.87x its honest twin while every bound on the worker's figures held). So on
a CPU target the worker's figures only decide when a timing round has converged and what the
wall-clock check holds them to; the figure is the parent's: the wall-clock check's batches of
back-to-back calls on fresh queries (:mod:`evals.harness.wall_check`), metered by the kernel's
count of the worker's CPU time (its busiest thread's: :mod:`evals.harness.process_clock`),
summarised over the batches that counted (:func:`evals.harness.wall_clock.figure_stats`).
Each upstream is measured the same way in the upstreams' own worker, on the same input sets
(:func:`evals.harness.wall_check.upstream_figure`): the same batches, outputs kept and
digested alike, so the harness's own per-call work weighs on both sides of a speedup.

The worker's figures stay in the verdict (``timing['worker_us']``, microseconds by name);
``timing['figure']`` says which clock the scenario's ``times`` come from. A GPU target keeps
the device time its worker measures (:mod:`evals.harness.trace_judge` and the wall-clock
check bound it there).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evals.harness import wall_check
from evals.harness.scenarios import Scenario
from evals.harness.session import Session
from evals.harness.timing import TimingStats
from evals.harness.verdict import ScenarioResult

__all__ = ["adopt_candidate", "candidate_header", "measure_upstreams", "upstream_header"]

PARENT = "parent"
"""``timing['figure']`` where the scenario's times are the parent's."""


def _applies(session: Session) -> bool:
    return session.target.device == "cpu" and session.upstreams is not None


def _figure(result: ScenarioResult, wall_key: str) -> TimingStats | None:
    """The candidate's figure from the wall-clock check named ``wall_key``, if it ran."""
    figures = result.timing.get(wall_key.removesuffix("_clock"))
    if not isinstance(figures, dict) or "figure_us" not in figures:
        return None
    return TimingStats(**figures["figure_us"])


def _keep_worker(result: ScenarioResult, name: str, worker: TimingStats) -> None:
    result.timing.setdefault("worker_us", {})[name] = worker.median_us


def adopt_candidate(session: Session, result: ScenarioResult, *, seeds: Sequence[int]) -> None:
    """The candidate's times become its wall-clock check's figure (CPU targets).

    Args:
        session: The run.
        result: A scenario whose first wall-clock check (``wall_clock``) has run.
        seeds: The input seeds its batches ran on; the upstreams' batches run on them too.
    """
    figure = _figure(result, "wall_clock")
    worker = result.times.get("candidate")
    if not _applies(session) or figure is None or worker is None:
        return
    _keep_worker(result, "candidate", worker)
    result.times["candidate"] = figure
    result.timing["figure"] = PARENT
    result.timing["figure_seeds"] = list(seeds)


def measure_upstreams(session: Session, result: ScenarioResult, names: Sequence[str]) -> None:
    """Each upstream's times become its own batches' figure, where the candidate's did.

    Raises:
        WorkerFailure: ``harness_error``: the upstreams' worker failed.
    """
    if result.timing.get("figure") != PARENT:
        return
    seeds = result.timing["figure_seeds"]
    for name in names:
        worker = result.times.get(name)
        if worker is None:
            continue
        _keep_worker(result, name, worker)
        result.times[name] = _upstream(session, result.scenario, result, name, worker, seeds)


def candidate_header(
    session: Session, result: ScenarioResult, header: dict[str, Any], *, wall_key: str
) -> dict[str, Any]:
    """A re-time's candidate answer with its figure in place of the worker's (CPU targets).

    ``header['worker_stats']`` keeps the worker's own; ``wall_key`` names the check that
    held this round to the parent's clock.
    """
    figure = _figure(result, wall_key)
    if not _applies(session) or figure is None or result.timing.get("figure") != PARENT:
        return header
    return _replaced(header, {"candidate": figure})


def upstream_header(
    session: Session, result: ScenarioResult, header: dict[str, Any], *, seeds: Sequence[int]
) -> dict[str, Any]:
    """A re-time's upstream answer with each upstream's figure in place (CPU targets).

    Raises:
        WorkerFailure: ``harness_error``: the upstreams' worker failed.
    """
    if not _applies(session) or result.timing.get("figure") != PARENT:
        return header
    figures = {
        name: _upstream(session, result.scenario, result, name, TimingStats(**st), seeds)
        for name, st in header.get("stats", {}).items()
    }
    return _replaced(header, figures)


def _upstream(
    session: Session,
    scenario: Scenario,
    result: ScenarioResult,
    name: str,
    worker: TimingStats,
    seeds: Sequence[int],
) -> TimingStats:
    return wall_check.upstream_figure(
        session, scenario, result, name, reported=worker.median_us, seeds=seeds
    )


def _replaced(header: dict[str, Any], figures: dict[str, TimingStats]) -> dict[str, Any]:
    """``header`` with ``figures`` as its stats and the worker's under ``worker_stats``."""
    stats = dict(header.get("stats", {}))
    worker = {name: stats[name] for name in figures if name in stats}
    stats.update({name: st.to_json() for name, st in figures.items()})
    return {**header, "stats": stats, "worker_stats": {**header.get("worker_stats", {}), **worker}}
