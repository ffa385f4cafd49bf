"""The worker's ``wall`` op: back-to-back candidate calls the parent times with its own clock.

The parent's side is :mod:`evals.harness.wall_check`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from evals.harness import channel
from evals.harness.candidate_errors import CandidateError, candidate_error
from evals.harness.digest import digests, warm
from evals.harness.failures import Code, Failure
from evals.harness.scenarios import Scenario
from evals.harness.targets import Inputs
from evals.harness.timing import call_seed

if TYPE_CHECKING:
    from evals.harness.worker import Worker

__all__ = ["KEEP_BYTES", "POOL_BYTES", "WallBatches", "call_inputs", "pool_size"]


def pool_size(count: int, q_bytes: int, *, fresh_queries: bool) -> int | None:
    """Fresh queries a batch of ``count`` calls gets (None: the target refills none).

    At most :data:`POOL_BYTES` of them; past it the calls share them in turn. The parent
    uses the same rule to rebuild the inputs of any call it verifies.
    """
    if not fresh_queries:
        return None
    return max(1, min(count, POOL_BYTES // max(1, q_bytes)))


def call_inputs(index: int, *, n_sets: int, pool: int | None) -> tuple[int, int | None]:
    """Batch call ``index``: its input set and the number of its fresh q (None: the set's own).

    Call ``index`` runs prepared call ``index % pool`` (or ``index % n_sets`` without fresh
    queries), and prepared call ``j`` is input set ``j % n_sets`` with fresh q ``j``.
    """
    if pool is None:
        return index % n_sets, None
    j = index % pool
    return j % n_sets, j


POOL_BYTES = 2 << 30
"""Fresh queries one batch may hold (a GPU prefill's q can be 64 MiB)."""
KEEP_BYTES = 1 << 30
"""Outputs one batch may keep for the parent to fetch; the parent sizes batches within it."""


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
    so none of their work runs into a batch. A batch keeps every call's output and answers
    with a digest of each (:mod:`evals.harness.digest`, on the vector of ``digest_seed``),
    all inside the parent's clock; ``{"outputs": [i, ...]}`` then hands over the outputs
    the parent chose to verify and drops the rest. The worker's own figure (``batch_s``) is
    for the record only: the parent times the request (:mod:`evals.harness.wall_check`).
    """

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.scenario: Scenario | None = None
        self.sets: list[Inputs] = []
        self.calls: list[Callable[[], object]] = []
        self.kept: list[torch.Tensor] = []

    def handle(self, req: dict[str, Any]) -> tuple[dict[str, Any], channel.Buffer]:
        """Make inputs, prepare calls, run a batch, or drop (see the class).

        A candidate failure drops everything too.
        """
        target = self.worker.target
        if "outputs" in req:
            return self._hand_over([int(i) for i in req["outputs"]])
        self.kept = []
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
        if n and "digest_seed" not in req:
            failure = Failure(Code.HARNESS_ERROR, "a wall batch without its digest seed")
            raise CandidateError(failure)
        digest_seed = int(req.get("digest_seed", 0))
        start = time.perf_counter()
        try:
            if "fill" in req:
                self.calls = self._fill(int(req["fill"]), int(req["seed"]))
                if "digest_seed" in req:  # the batch's projection vector, made untimed
                    assert self.scenario is not None
                    spec = target.expected_output(self.scenario)
                    warm(math.prod(spec.shape), int(req["digest_seed"]), spec.device)
            calls, outputs = self.calls, []
            for i in range(n):
                outputs.append(calls[i % len(calls)]())
            if target.device == "cuda":
                torch.cuda.synchronize()
            committed = self._commit(outputs, digest_seed) if n else []
        except Exception as exc:
            self.calls, self.scenario, self.sets = [], None, []
            if isinstance(exc, CandidateError):
                raise
            raise candidate_error(exc) from exc
        answer = {"ok": True, "n": n, "batch_s": time.perf_counter() - start}
        return {**answer, "digests": committed} if n else answer, b""

    def _commit(self, outputs: list[object], digest_seed: int) -> list[float]:
        """Keep the batch's outputs and return their digests (inside the parent's clock)."""
        if not all(isinstance(o, torch.Tensor) for o in outputs):
            raise CandidateError(Failure(Code.WRONG_SIGNATURE, "a batch call returned no Tensor"))
        self.kept = [o for o in outputs if isinstance(o, torch.Tensor)]
        return digests(self.kept, digest_seed)

    def _hand_over(self, chosen: list[int]) -> tuple[dict[str, Any], channel.Buffer]:
        """The kept outputs the parent chose; the rest are dropped."""
        kept, self.kept = self.kept, []
        if any(not 0 <= i < len(kept) for i in chosen):
            failure = Failure(Code.HARNESS_ERROR, "the parent asked for an output no call made")
            raise CandidateError(failure)
        metas, payload = channel.pack_tensors([kept[i] for i in chosen])
        return {"ok": True, "tensors": metas}, payload

    def _fill(self, count: int, seed: int) -> list[Callable[[], object]]:
        """``count`` calls on the sets in turn, each with its own fresh q (within the pool)."""
        target, scenario, sets = self.worker.target, self.scenario, self.sets
        assert scenario is not None and sets
        q = sets[0].get("q")
        q_bytes = q.numel() * q.element_size() if isinstance(q, torch.Tensor) else 0
        pool = pool_size(count, q_bytes, fresh_queries=target.timing.fresh_queries and q_bytes > 0)
        if pool is None:
            return [self.worker.prepare(base) for base in sets]
        calls: list[Callable[[], object]] = []
        for i in range(pool):
            base = sets[i % len(sets)]
            inputs = {**base, "q": torch.empty_like(base["q"])}
            target.refill_query(scenario, inputs, call_seed(seed, i, "wall"))
            calls.append(self.worker.prepare(inputs))
        return calls
