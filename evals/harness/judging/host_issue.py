"""GPU: the host issue cap, one rule for whatever is judged as the candidate.

Device time hides a call's host work behind a spin, so work on the host must not be a way to
compute: a call's median host issue time (the time the call takes to return) must stay within
a cap. Honest launch paths differ (a C++ candidate's torch operator, FA3's Python interface,
FA4's CuTe DSL dispatch), so the floor of the cap is the launch path's own, from the target's
``[host_issue]`` table (:class:`evals.targets.HostIssueCaps`, measured by
``benchmarks/host_issue_calibration.py``): a candidate kernel gets ``candidate``'s, an upstream
judged as the candidate in a self-check gets its own. Above that floor the cap follows the
host's moment, alike for every path: :data:`UPSTREAM_FACTOR` times the slowest upstream's issue
time on the scenario, and the slowest upstream's on any scenario of the run so far (on the
H200, FA3's medians ranged over 142-611 us in one run beside four agents).
"""

from __future__ import annotations

from collections.abc import Mapping

from evals.harness.failures import Code, Failure
from evals.harness.measurement.timing import TimingStats
from evals.harness.verdict.record import ScenarioResult
from evals.harness.worker_link.session import Session

__all__ = ["UPSTREAM_FACTOR", "check", "launch_path"]

UPSTREAM_FACTOR = 2.0
"""The cap is at least this many times the slowest upstream's issue time on the scenario."""


def launch_path(session: Session) -> str:
    """The launch path judged as the candidate.

    An upstream's name in a self-check, else ``candidate`` (the candidate's C++ operator).
    """
    return session.client.candidate_upstream or "candidate"


def check(
    session: Session,
    result: ScenarioResult,
    issue: Mapping[str, TimingStats] | None = None,
) -> Failure | None:
    """The candidate's median host issue time against the cap; None on a CPU target.

    ``issue``: the median issue times (microseconds) by implementation, the scenario's own
    (``result.issue``) where not given. Every upstream figure seen raises the run's
    ``session.upstream_issue_us``.
    """
    issue = result.issue if issue is None else issue
    if session.target.device != "cuda":
        return None
    ups = [st.median_us for name, st in issue.items() if name != "candidate"]
    session.upstream_issue_us = max([session.upstream_issue_us, *ups])
    cand = issue.get("candidate")
    if cand is None:
        return None
    caps = session.target.host_issue
    if caps is None:
        raise ValueError(f"target {session.target.name}: a GPU target needs [host_issue] caps")
    path = launch_path(session)
    if path not in caps.cap_us:
        raise ValueError(f"target {session.target.name}: no host issue cap for {path!r}")
    floor = caps.cap_us[path]
    cap = max(floor, UPSTREAM_FACTOR * max(ups, default=0.0), session.upstream_issue_us)
    if cand.median_us > cap:
        reason = (
            f"the call spent {cand.median_us:.0f} us on the host before returning (median), "
            f"over the cap of {cap:.0f} us: work on the host or a synchronising call"
        )
        return Failure(Code.HOST_WORK, reason)
    result.checks["host_issue"] = (
        f"passed: {cand.median_us:.0f} us <= cap {cap:.0f} us ({path} path floor {floor:.0f} us)"
    )
    return None
