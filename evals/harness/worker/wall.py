"""The worker's ``wall`` op: back-to-back candidate calls the parent times with its own clock.

The parent's side is :mod:`evals.harness.clock_checks.wall_check`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any, Protocol

import torch

from evals.harness.clock_checks.digest import digests, warm
from evals.harness.clock_checks.query_flips import base_bits, flip, make_mask
from evals.harness.failures import Code, Failure
from evals.harness.measurement.stream_gate import DeviceGate
from evals.harness.scenarios import Scenario
from evals.harness.targets import Inputs, Target
from evals.harness.worker.errors import CandidateError, candidate_error
from evals.harness.worker.gated import GatedQueue
from evals.harness.worker_link import channel
from evals.harness.worker_link.protocol import fresh_queries


class Host(Protocol):
    """What the ``wall`` op needs of its worker (:class:`evals.harness.worker.serve.Worker`)."""

    target: Target
    ops: Any
    """The candidate's loaded operators; None in a worker that loaded no candidate."""
    gate: DeviceGate | None
    """The parent's gate (a GPU candidate's worker whose check gates its batches), or None."""

    def prepare(self, inputs: Inputs) -> Callable[[], torch.Tensor]:
        """The candidate call on ``inputs``."""
        ...


__all__ = ["WallBatches"]


class WallBatches:
    """The ``wall`` op: back-to-back candidate calls for the parent to time with its own clock.

    ``{"scenario", "seeds", "mask_seed"}`` makes the scenario's timing input sets from the
    seeds of the timing round it checks (the same work as the timed calls: a ragged KV
    cache's lengths come from the seeds) and, where the target refills queries, each set's
    sign mask (:mod:`evals.harness.clock_checks.query_flips`), and its calls: the candidate's, or
    with ``"impl": NAME`` an upstream's (only in the upstreams' own worker, which never loads a
    candidate: on a CPU target their batches give every speedup's figure, measured as the
    candidate's are), or with ``"impl": "null"`` and ``"query": {"shape", "dtype"}`` calls that
    return a fresh output and do nothing, on sets of q alone (the null batches subtracted from
    a gated check's, :mod:`evals.harness.clock_checks.null_batches`, also there only);
    ``{"warm": seed}`` makes the digests' weights of ``seed``; ``{"n": N,
    "digest_seed", "shifts"}`` runs N calls back to back on the sets in turn, call ``i`` on its
    set's q flipped at ``shifts[i]`` first (so no call repeats an earlier call's inputs, and none
    can be computed before the request), on a GPU with no synchronisation between the calls and one
    ``torch.cuda.synchronize()`` after the last, so work a call left running is waited for; N 0 is
    the no-op (the same path, no call, timed for the record); ``{"drop": true}`` lets the inputs go.
    Preparing requests end synchronised, so none of their work runs into a batch. A batch keeps
    every call's output and answers with a digest of each (:mod:`evals.harness.clock_checks.digest`,
    keyed by ``digest_seed``), all inside the parent's clock; ``{"outputs": [i, ...]}`` then hands
    over the outputs the parent chose to verify and drops the rest. The worker's own figure
    (``batch_s``) is for the record only: the parent times the request
    (:mod:`evals.harness.clock_checks.wall_check`). Gated (a GPU candidate's worker given the
    parent's gate): ``"gated": true`` on the preparing request also runs every kernel once;
    ``{"n", "digest_seed", "gated": TOKEN}`` queues the batch behind the gate (its offsets come
    through the gate) and answers ``armed`` (with ``queued_shut``: the calls that returned
    before the gate opened); ``"copies": C`` on the preparing request cycles the
    calls through C copies of the round's sets (cold inputs without a flush);
    ``{"finish": true}`` waits for it and answers the digests
    (:mod:`evals.harness.worker.gated`).
    """

    def __init__(self, worker: Host) -> None:
        self.worker = worker
        self.scenario: Scenario | None = None
        self.sets: list[Inputs] = []
        self.calls: list[Callable[[], object]] = []
        self.flips: list[tuple[torch.Tensor, torch.Tensor]] = []
        """Per set: its q's base bits and its sign mask (none: the target refills no q)."""
        self.kept: list[torch.Tensor] = []
        self.gated: GatedQueue | None = None
        self.round_sets = 1
        """The timing round's sets (``self.sets`` holds copies of them after them)."""
        self.cursor = 0
        """The copy of the sets the next batch starts on (see :meth:`_turn`)."""

    def handle(self, req: dict[str, Any]) -> tuple[dict[str, Any], channel.Buffer]:
        """Make inputs, run a batch, hand over outputs, or drop (see the class).

        A candidate failure drops everything too.
        """
        if "outputs" in req:
            return self._hand_over([int(i) for i in req["outputs"]])
        if req.get("finish"):
            return self._finish(), b""
        self.kept = []
        if req.get("drop") or "scenario" in req:
            self.scenario, self.sets, self.calls, self.flips = None, [], [], []
        n = int(req.get("n", 0))
        if n and not self.calls:
            failure = Failure(Code.HARNESS_ERROR, "a wall batch before its scenario was prepared")
            raise CandidateError(failure)
        unshifted = "gated" not in req and len(req.get("shifts", ())) != n and self.flips
        if n and ("digest_seed" not in req or unshifted):  # gated: the offsets come by the gate
            failure = Failure(Code.HARNESS_ERROR, "a wall batch without its seeds")
            raise CandidateError(failure)
        start = time.perf_counter()
        try:
            if "scenario" in req:
                self._prepare(Scenario(**req["scenario"]), req)
            if "warm" in req and self.scenario is not None:  # the round's digest weights
                spec = self.worker.target.expected_output(self.scenario)
                warm(math.prod(spec.shape), int(req["warm"]), spec.device)
            if n and "gated" in req:
                return self._arm(n, req), b""
            committed = self._batch(n, req) if n else []
        except Exception as exc:
            self.scenario, self.sets, self.calls, self.flips = None, [], [], []
            if isinstance(exc, CandidateError):
                raise
            raise candidate_error(exc) from exc
        answer = {"ok": True, "n": n, "batch_s": time.perf_counter() - start}
        return {**answer, "digests": committed} if n else answer, b""

    def _prepare(self, scenario: Scenario, req: dict[str, Any]) -> None:
        """The timing round's input sets, a call on each, and each set's flips."""
        target = self.worker.target
        self.scenario = scenario
        impl = str(req.get("impl", "candidate"))
        if impl != "candidate" and self.worker.ops is not None:
            reason = "an upstream's wall batches asked of a worker that loaded a candidate"
            raise CandidateError(Failure(Code.HARNESS_ERROR, reason))
        seeds = [int(x) for x in req["seeds"]]
        spec = target.expected_output(scenario)
        if impl == "null":
            sets = [_null_query(req.get("query"), spec.device) for _ in seeds]
        else:
            sets = target.make_timing_inputs(scenario, seeds)
        # copies of the round's sets, cycled in order (call i on set i % len: the same work as
        # set i % len(seeds)), so that a gated batch's inputs are cold without a flush
        copies = max(1, int(req.get("copies", 1)))
        self.sets = sets + [_copy(s) for _ in range(copies - 1) for s in sets]
        self.round_sets, self.cursor = len(sets), 0
        if impl == "candidate":
            self.calls = [self.worker.prepare(inputs) for inputs in self.sets]
        elif impl == "null":
            self.calls = [_null_output(spec.shape, spec.dtype, spec.device) for _ in self.sets]
        else:
            upstream = target.upstream(impl)
            self.calls = [upstream.prepare(inputs) for inputs in self.sets]
        if fresh_queries(target, self.sets):
            seed = int(req.get("mask_seed", 0))
            self.flips = [(base_bits(s["q"]), make_mask(s["q"], seed)) for s in self.sets]
        if req.get("gated"):
            self._gated().warm([s["q"] for s in self.sets], self.flips, self.calls)
        if target.device == "cuda":
            torch.cuda.synchronize()

    def _gated(self) -> GatedQueue:
        """The gated queue; a harness error where this worker was given no gate or no flips."""
        if self.worker.gate is None or not self.flips:
            why = "no gate" if self.worker.gate is None else "no fresh queries to gate"
            raise CandidateError(Failure(Code.HARNESS_ERROR, f"a gated wall batch with {why}"))
        if self.gated is None:
            self.gated = GatedQueue(self.worker.gate)
        return self.gated

    def _turn(self, n: int) -> list[int]:
        """The sets a batch of ``n`` calls runs on, call ``i`` on the ``i``-th; the cursor moved.

        Each batch starts where the last left off, a whole copy of the round's sets on: call
        ``i`` still runs on a copy of set ``i % len(seeds)`` (the parent's rule when it rebuilds
        a call's inputs), while the copies cycle across batches. Restarted at the first copy,
        a batch of fewer calls than the copies met the inputs the last batch had left in the
        L2: start.cu's KV-cache calls of 2-4.5 ms, two or three a batch, ran at 0.63-0.68 of
        their cold device time on an H100 (s38), and the bound held no forge there.
        """
        start, total = self.cursor, len(self.sets)
        whole = -(-n // self.round_sets) * self.round_sets
        self.cursor = (start + whole) % total
        return [(start + i) % total for i in range(n)]

    def _arm(self, n: int, req: dict[str, Any]) -> dict[str, Any]:
        """Queue ``n`` calls behind the gate; ``armed`` once all of it is queued."""
        order = self._turn(n)
        queries = [self.sets[j]["q"] for j in order]
        flips, calls = [self.flips[j] for j in order], [self.calls[j] for j in order]
        outputs, shut = self._gated().arm(int(req["gated"]), n, int(req["digest_seed"]),
                                          queries, flips, calls)  # fmt: skip
        if not all(isinstance(o, torch.Tensor) for o in outputs):
            raise CandidateError(Failure(Code.WRONG_SIGNATURE, "a batch call returned no Tensor"))
        return {"ok": True, "armed": True, "n": n, "queued_shut": shut}

    def _finish(self) -> dict[str, Any]:
        """The gated batch's digests, once the device is done; its outputs kept."""
        start = time.perf_counter()
        try:
            self.kept, committed = self._gated().finish()
        except CandidateError:
            raise
        except Exception as exc:
            raise candidate_error(exc) from exc
        answer = {"ok": True, "n": len(committed), "batch_s": time.perf_counter() - start}
        return {**answer, "digests": committed}

    def _batch(self, n: int, req: dict[str, Any]) -> list[str]:
        """``n`` calls back to back (each on a freshly flipped q); their digests."""
        calls, sets, flips = self.calls, self.sets, self.flips
        offsets = [int(x) for x in req.get("shifts", ())]
        outputs = []
        for i, j in enumerate(self._turn(n)):
            if flips:
                flip(sets[j]["q"], flips[j][0], flips[j][1], offsets[i])
            outputs.append(calls[j]())
        if self.worker.target.device == "cuda":
            torch.cuda.synchronize()
        return self._commit(outputs, int(req["digest_seed"]))

    def _commit(self, outputs: list[object], digest_seed: int) -> list[str]:
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


def _null_query(query: object, device: str) -> Inputs:
    """A null batch's input set on ``device``: a q of the candidate's q's shape and dtype alone.

    Its values are never read but by the flips, whose cost depends on its size alone; the
    scenario's other inputs (a KV cache of up to 32 GB) stay out of this process.
    """
    if not isinstance(query, dict) or not isinstance(query.get("shape"), list):
        raise CandidateError(Failure(Code.HARNESS_ERROR, "a null batch without its q's shape"))
    dtype = getattr(torch, str(query.get("dtype")), None)
    if not isinstance(dtype, torch.dtype):
        reason = f"a null batch with an unknown q dtype {query.get('dtype')!r}"
        raise CandidateError(Failure(Code.HARNESS_ERROR, reason))
    return {"q": torch.empty([int(n) for n in query["shape"]], dtype=dtype, device=device)}


def _null_output(shape: tuple[int, ...], dtype: torch.dtype, device: str) -> Callable[[], object]:
    """A call that does nothing but return a fresh output.

    Its memory comes from the caching allocator, as a kernel's output does; it is never
    written (writing it is part of the work a call is timed for).
    """
    return lambda: torch.empty(shape, dtype=dtype, device=device)


def _copy(inputs: Inputs) -> Inputs:
    """The same inputs in memory of their own."""
    return {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
