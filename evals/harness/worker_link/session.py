"""What judging needs across its phases: the session, its tally, seeds, references, unpacking."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from evals.harness.measurement.gpu import Ceilings
from evals.harness.scenarios import Scenario
from evals.harness.targets import Target
from evals.harness.verdict.audit_record import RoundAudit
from evals.harness.verdict.record import ScenarioResult
from evals.harness.worker_link import channel
from evals.harness.worker_link.budget import Budget
from evals.harness.worker_link.worker_client import WorkerClient


def derive_seed(seed: int, *parts: object) -> int:
    """A 62-bit seed derived from ``seed`` and ``parts``."""
    digest = hashlib.sha256("/".join(map(str, (seed, *parts))).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 2


def timing_seeds(session: Session, scenario: Scenario, attempt: int) -> list[int]:
    """The input-set seeds of timing round ``attempt`` of ``scenario`` (at least 3 sets)."""
    n_sets = max(3, session.target.inputs_per_scenario)
    return [derive_seed(session.seed, scenario.id, "time", attempt, i) for i in range(n_sets)]


Progress = Callable[[int, int, ScenarioResult], None]
"""Hears of each judged scenario: (done, total, result)."""


@dataclass
class Tally:
    """Seconds a run spent, by where they went.

    Candidate calls, upstream calls, the parent's reference checks, the trace and unpacking
    outputs; the workers' start and warm-up (``start_s``: before the lock on a GPU target);
    ceilings and the trace's kernel list (``setup_s``); all requests (``requests_s``) and the
    worker's share of them (``worker_s``).
    """

    candidate_s: float = 0.0
    upstream_s: float = 0.0
    reference_s: float = 0.0
    trace_s: float = 0.0
    unpack_s: float = 0.0
    start_s: float = 0.0
    setup_s: float = 0.0
    requests_s: float = 0.0
    worker_s: float = 0.0


@dataclass
class Session:
    """What judging a scenario needs: the target, the worker, the run's seed and command."""

    target: Target
    client: WorkerClient
    seed: int
    command: str
    ceilings: Ceilings | None = None
    tally: Tally = field(default_factory=Tally)
    own_kernels: frozenset[str] | None = None
    """The candidate's kernel names for the GPU trace check; None where it does not apply."""
    upstreams: WorkerClient | None = None
    """The worker that times the upstreams: a process that never loads the candidate."""
    audits: dict[str, list[RoundAudit]] = field(default_factory=dict)
    """Per scenario id, the candidate's metered timing rounds awaiting their null rounds."""
    null_rechecks: dict[str, list[Any]] = field(default_factory=dict)
    """Per scenario id, its passed gated checks awaiting null batches timed once the
    candidate's process is gone (``clock_checks.null_batches.Kept``, a later room's type:
    :mod:`evals.harness.clock_checks.null_recheck`)."""
    upstream_issue_us: float = 0.0
    """GPU: the slowest median host issue time of any upstream round so far in this run."""
    budget: Budget | None = None
    """The candidate's time budget: no scenario starts once its worker has spent it."""


def unpack(
    session: Session, metas: list[dict[str, Any]], payload: channel.Buffer
) -> list[torch.Tensor]:
    """Rebuild the worker's tensors (onto the GPU for GPU targets), counting the seconds."""
    t0 = time.monotonic()
    try:
        return channel.unpack_tensors(metas, payload)
    finally:
        session.tally.unpack_s += time.monotonic() - t0


def note_peak(result: ScenarioResult, process: str, peak: object) -> None:
    """Keep the largest GPU memory reserved by ``process`` (worker or harness) in this scenario."""
    if isinstance(peak, int | float):
        key = f"{process}_peak_gib"
        result.memory[key] = max(result.memory.get(key, 0.0), peak / 2**30)
