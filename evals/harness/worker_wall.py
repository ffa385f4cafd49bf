"""The worker's ``wall`` op: back-to-back candidate calls the parent times with its own clock.

The parent's side is :mod:`evals.harness.wall_clock`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from evals.harness import channel
from evals.harness.candidate_errors import CandidateError, candidate_error
from evals.harness.failures import Code, Failure
from evals.harness.scenarios import Scenario
from evals.harness.targets import Inputs
from evals.harness.timing import call_seed

if TYPE_CHECKING:
    from evals.harness.worker import Worker

__all__ = ["WallBatches"]


class WallBatches:
    """The ``wall`` op: back-to-back candidate calls for the parent to time with its own clock.

    ``{"scenario", "seeds"}`` makes the scenario's timing input sets from the seeds of the
    timing round it checks (the same work as the timed calls: a ragged KV cache's lengths
    come from the seeds); ``{"fill": N, "seed"}`` prepares N
    calls on them in turn, each with its own fresh q where the target refills queries (so no
    call of a batch repeats an earlier call's inputs, and a cache keyed on them never hits),
    at most :attr:`POOL_BYTES` of queries (past it the calls share them in turn); ``{"n": N}`` runs
    N prepared calls back to back and answers: on a GPU with no synchronisation between the
    calls and one ``torch.cuda.synchronize()`` after the last, so work a call left running
    is waited for; N 0 is the no-op whose round trip the parent subtracts (the same path,
    no call); ``{"drop": true}`` lets the inputs go. Preparing requests end synchronised,
    so none of their work runs into a batch. The worker's own figure (``batch_s``) is for the
    record only: the parent times the request (:mod:`evals.harness.wall_clock`).
    """

    POOL_BYTES = 2 << 30
    """Fresh queries one batch may hold (a GPU prefill's q can be 64 MiB)."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.scenario: Scenario | None = None
        self.sets: list[Inputs] = []
        self.calls: list[Callable[[], object]] = []

    def handle(self, req: dict[str, Any]) -> tuple[dict[str, Any], channel.Buffer]:
        """Make inputs, prepare calls, run a batch, or drop (see the class).

        A candidate failure drops everything too.
        """
        target = self.worker.target
        if req.get("drop") or "scenario" in req or "fill" in req:
            self.calls = []
        if req.get("drop") or "scenario" in req:
            self.scenario, self.sets = None, []
        if "scenario" in req:
            self.scenario = Scenario(**req["scenario"])
            self.sets = target.make_timing_inputs(self.scenario, [int(x) for x in req["seeds"]])
        n = int(req.get("n", 0))
        if (n and not self.calls) or ("fill" in req and not self.sets):
            failure = Failure(Code.HARNESS_ERROR, "a wall batch before its scenario was prepared")
            raise CandidateError(failure)
        start = time.perf_counter()
        try:
            if "fill" in req:
                self.calls = self._fill(int(req["fill"]), int(req["seed"]))
            calls = self.calls
            for i in range(n):
                calls[i % len(calls)]()
            if target.device == "cuda":
                torch.cuda.synchronize()
        except Exception as exc:
            self.calls, self.scenario, self.sets = [], None, []
            if isinstance(exc, CandidateError):
                raise
            raise candidate_error(exc) from exc
        return {"ok": True, "n": n, "batch_s": time.perf_counter() - start}, b""

    def _fill(self, count: int, seed: int) -> list[Callable[[], object]]:
        """``count`` calls on the sets in turn, each with its own fresh q (within the pool)."""
        target, scenario, sets = self.worker.target, self.scenario, self.sets
        assert scenario is not None and sets
        q = sets[0].get("q")
        if not target.timing.fresh_queries or not isinstance(q, torch.Tensor):
            return [self.worker.prepare(base) for base in sets]
        fresh = max(1, min(count, self.POOL_BYTES // max(1, q.numel() * q.element_size())))
        calls: list[Callable[[], object]] = []
        for i in range(fresh):
            base = sets[i % len(sets)]
            inputs = {**base, "q": torch.empty_like(base["q"])}
            target.refill_query(scenario, inputs, call_seed(seed, i, "wall"))
            calls.append(self.worker.prepare(inputs))
        return calls
