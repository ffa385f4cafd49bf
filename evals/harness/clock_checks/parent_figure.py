"""On a CPU target the time every speedup uses is the parent's, for candidate and upstreams alike.

The worker's own timing loop runs on a clock inside the candidate's process, which a kernel that
took over that process can slow (a C library's clock re-pointed for its own process scored 1.38x and
1.87x its honest twin while every bound on the worker's figures held). So on a CPU target the
worker's medians decide when a timing round has converged and what the wall-clock check holds them
to, and the figure is the parent's: the wall-clock check's batches of back-to-back calls on fresh
queries (:mod:`evals.harness.clock_checks.wall_check`), metered by the kernel's count of the
worker's CPU time (its busiest thread's: :mod:`evals.harness.measurement.process_clock`), the
fastest batch per call (:func:`evals.harness.clock_checks.wall_reading.figure_stats`) of the
check's first round, sized from the parent's readings alone: the rounds that follow a U the
worker's reports do not explain decide the check, never the figure (a forged report, which
fails rounds at will, once bought more and longer batches than its twin ran). Each upstream
is measured the same way in the upstreams' own worker, on the same input sets
(:func:`evals.harness.clock_checks.wall_check.upstream_figure`): the same batches, outputs kept and
digested alike.

On a small call the parent's figure keeps the batch's flips and digests in (the gross time
per call), for every implementation alike. There what the parent takes off a batch for its own
flips and digests (timed apart, in its own process) is as large as what it keeps, and beside
load the net figure strayed low: in one CI run the start kernel read 2.75x SDPA on a 20 us
scenario that side-by-side rounds put at 0.8x, and the strict re-run rejected the honest
kernel. The gross time subtracts nothing, so it cannot stray low; it adds the same per-call
work to both sides of a speedup, which moves a small call's speedup towards 1 (a measured
limit, in THREATS.md). The worker's own median never enters a figure: an earlier design
floored small calls by it, and a forged clock, which lowers only its own worker's median,
escaped a floor its honest twin paid (1.17x its twin in one CI run).

Whether a scenario's calls are small is decided once, from the candidate's first batches, and
holds on both sides of every speedup on it: decided per implementation, one side of a
side-by-side round took one figure and the other side the other. The worker's figures stay in
the verdict (``timing['worker_us']``, microseconds by name), ``timing['figure_from']`` says
which of the parent's figures counted for each (``net`` or ``gross``), and
``timing['figure']`` is ``parent``. A GPU target keeps the device time its worker measures
(the wall-clock check and the trace check bound it there).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evals.harness.clock_checks import wall_check
from evals.harness.measurement.timing import TimingStats
from evals.harness.scenarios import Scenario
from evals.harness.verdict.record import ScenarioResult
from evals.harness.worker_link.session import Session

__all__ = ["adopt_candidate", "candidate_header", "measure_upstreams", "upstream_header"]

PARENT = "parent"
"""``timing['figure']`` where the scenario's times are the parent's figures."""
SMALL_SHARE = 0.5
"""A scenario's calls are small where the parent's own per-call costs it took off the
candidate's first batches (flips and digests) are at least this share of the figure it kept:
there every implementation's figure is the gross time per call (``timing['small_call']``)."""


def _applies(session: Session) -> bool:
    return session.target.device == "cpu" and session.upstreams is not None


def _figure(result: ScenarioResult, wall_key: str, *, gross: bool = False) -> TimingStats | None:
    """The candidate's figure from the wall-clock check named ``wall_key``, if it ran."""
    figures = result.timing.get(wall_key.removesuffix("_clock"))
    key = "gross_us" if gross else "figure_us"
    if not isinstance(figures, dict) or key not in figures:
        return None
    return TimingStats(**figures[key])


def _small(result: ScenarioResult) -> bool:
    return bool(result.timing.get("small_call"))


def _keep_worker(result: ScenarioResult, name: str, worker: TimingStats) -> None:
    result.timing.setdefault("worker_us", {})[name] = worker.median_us


def _counted(result: ScenarioResult, name: str, figure: TimingStats) -> TimingStats:
    """``name``'s figure, with which of the parent's figures it is on record."""
    result.timing.setdefault("figure_from", {})[name] = "gross" if _small(result) else "net"
    return figure


def _costs(figures: object) -> float:
    """Per call, what the parent took off a batch for its flips and digests (microseconds)."""
    if not isinstance(figures, dict):
        return 0.0
    return float(figures.get("digest_us", 0.0)) + float(figures.get("flip_us", 0.0))


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
    # the flips and digests are the same for every implementation on the scenario (the same
    # shapes): small calls are small on both sides
    small = _costs(result.timing.get("wall")) >= SMALL_SHARE * figure.median_us
    result.timing["small_call"] = small
    if small:
        figure = _figure(result, "wall_clock", gross=True) or figure
    result.times["candidate"] = _counted(result, "candidate", figure)
    result.timing["figure"] = PARENT
    result.timing["figure_seeds"] = list(seeds)


def measure_upstreams(session: Session, result: ScenarioResult, names: Sequence[str]) -> None:
    """Each upstream's times become its batches' figure, taken as the candidate's.

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
        parent = _upstream(session, result.scenario, result, name, worker, seeds)
        result.times[name] = _counted(result, name, parent)


def candidate_header(
    session: Session, result: ScenarioResult, header: dict[str, Any], *, wall_key: str
) -> dict[str, Any]:
    """A re-time's candidate answer with the parent's figure in place (CPU targets).

    ``header['worker_stats']`` keeps the worker's own; ``wall_key`` names the check that
    held this round to the parent's clock.
    """
    figure = _figure(result, wall_key, gross=_small(result))
    if not _applies(session) or figure is None or result.timing.get("figure") != PARENT:
        return header
    return _replaced(header, {"candidate": _counted(result, "candidate", figure)})


def upstream_header(
    session: Session, result: ScenarioResult, header: dict[str, Any], *, seeds: Sequence[int]
) -> dict[str, Any]:
    """A re-time's upstream answer with each upstream's parent figure in place (CPU targets).

    Raises:
        WorkerFailure: ``harness_error``: the upstreams' worker failed.
    """
    if not _applies(session) or result.timing.get("figure") != PARENT:
        return header
    figures = {}
    for name, st in header.get("stats", {}).items():
        worker = TimingStats(**st)
        parent = _upstream(
            session, result.scenario, result, name, worker, seeds, record="upstream_wall_retime"
        )
        figures[name] = _counted(result, name, parent)
    return _replaced(header, figures)


def _upstream(
    session: Session,
    scenario: Scenario,
    result: ScenarioResult,
    name: str,
    worker: TimingStats,
    seeds: Sequence[int],
    *,
    record: str = "upstream_wall",
) -> TimingStats:
    return wall_check.upstream_figure(
        session,
        scenario,
        result,
        name,
        reported=worker.median_us,
        seeds=seeds,
        gross=_small(result),
        record=record,
    )


def _replaced(header: dict[str, Any], figures: dict[str, TimingStats]) -> dict[str, Any]:
    """``header`` with ``figures`` as its stats and the worker's under ``worker_stats``."""
    stats = dict(header.get("stats", {}))
    worker = {name: stats[name] for name in figures if name in stats}
    stats.update({name: st.to_json() for name, st in figures.items()})
    return {**header, "stats": stats, "worker_stats": {**header.get("worker_stats", {}), **worker}}
