"""The parent's check that every call of a wall-clock batch did its work.

A batch's answer commits to each call's output (:mod:`evals.harness.clock_checks.digest`); then the
parent draws one call at random (from the run's secret seed: the worker cannot know which), fetches
its output, and requires both that it is the output committed to and that it is right for that
call's inputs, which the parent rebuilds itself (the timing round's input set and the call's flipped
q, by the rule the worker follows: :class:`evals.harness.worker.wall.WallBatches`). The digest is
checked at once; the accuracy once the check's batches are done and the worker has let its inputs go
(:meth:`BatchVerifier.settle`): a large KV cache is then never held by both processes at once, and
while the batches run the parent keeps only the sets' queries. A process that skipped a fraction f
of a batch's calls passes one verified batch with probability 1 - f; the first batches of a check
are all verified, later ones at random. The digests' cost is timed here, on the parent's own copy of
the fetched output, and so is flipping the calls' queries
(:mod:`evals.harness.clock_checks.query_flips`): both are subtracted from the batch's time, measured
the way the batches are (the parent's CPU time where the batches are metered by the worker's).
"""

from __future__ import annotations

import contextlib
import functools
import random
import time
from collections.abc import Callable, Iterator, Sequence

import torch

from evals.harness.clock_checks import query_flips
from evals.harness.clock_checks.digest import digests as compute_digests
from evals.harness.clock_checks.digest import matches
from evals.harness.clock_checks.wall_clock import WallFailure
from evals.harness.failures import Code, Failure
from evals.harness.measurement.gpu import CudaEventTimer, release_cached_memory
from evals.harness.scenarios import Scenario
from evals.harness.targets import Inputs
from evals.harness.verification.sampled_check import check_sampled
from evals.harness.worker_link.protocol import fresh_queries
from evals.harness.worker_link.session import Session, derive_seed, unpack
from evals.harness.worker_link.worker_client import WorkerClient

__all__ = ["ALWAYS_VERIFIED", "LATER_SHARE", "BatchVerifier"]

ALWAYS_VERIFIED = 4
"""The first batches of a check are all verified; after them, a random share."""
LATER_SHARE = 0.25
"""The share of later batches verified, drawn after each batch from the secret seed: a
process that skips a fraction f of its calls in every batch escapes a check of b batches with
(1 - f) ** (4 + (b - 4) / 4) at best, and every scenario is checked."""


_CACHE_BYTES = 128 << 20
"""Copies of a fetched output that the parent's digest timing cycles through take at least
this many bytes together (twice the H200's 60 MB L2), or one per call where fewer."""


class BatchVerifier:
    """Verifies one random call of each batch of one wall-clock check.

    Args:
        session: The run (its client is the candidate's worker).
        scenario: The scenario the batches run.
        seeds: The timing round's input seeds (the sets the batches run on).
        key: The check's name (``wall_clock`` or ``strict_wall_clock``), for the draw.
        timeout_s: Per request, seconds.
        cpu_time: Time the parent's own digests and flips by this thread's CPU time (the
            batches are metered by the worker's), not by the wall clock.
        mask_seed: The seed the worker made its sign masks from.
        client: The worker whose batches these are; the candidate's by default.
        accuracy: Whether fetched outputs are checked against the reference too (an
            upstream's batches, timed for its figure, are only held to their digests).
        gated: The batches are gated (:mod:`evals.harness.clock_checks.gated_batch`): their
            flips read each offset on the device (``flip_at``), and only the flips' device
            time is in the interval, so that is what is timed and subtracted.
    """

    def __init__(
        self,
        session: Session,
        scenario: Scenario,
        seeds: Sequence[int],
        *,
        key: str,
        timeout_s: float | None = None,
        cpu_time: bool = False,
        mask_seed: int = 0,
        client: WorkerClient | None = None,
        accuracy: bool = True,
        gated: bool = False,
    ) -> None:
        self.session, self.scenario, self.seeds = session, scenario, list(seeds)
        self.gated = gated
        self.client = client
        self.accuracy = accuracy
        self.mask_seed = mask_seed
        self.clock = time.thread_time if cpu_time else time.perf_counter
        self.rng = random.Random(derive_seed(session.seed, scenario.id, "wall-verify", key))
        self.timeout_s = timeout_s
        self.sets: list[Inputs] | None = None
        self.queries: list[torch.Tensor] | None = None
        """Each set's q (the parent's copy), kept while the batches run; None before."""
        self.fresh = False
        self.pending: list[tuple[int, list[int], torch.Tensor, str]] = []
        """Fetched outputs whose accuracy :meth:`settle` checks: (call, shifts, output, where)."""
        self.verified = 0
        self.skipped = 0
        self.seconds = 0.0
        self.parts: dict[str, float] = {}
        """Seconds by part (``wall_inputs``: the timing sets rebuilt here, ``wall_fetch``,
        ``wall_reference``: the accuracy check with its float64 reference,
        ``wall_digest_timing``, ``wall_flip_timing``), kept in the scenario's seconds."""
        self._digest_per_call_s = float("inf")
        self._flip_s = float("inf")
        self._flip_timings = 0
        self._masks: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def __call__(
        self, *, calls: int, shifts: Sequence[int], digest_seed: int, digests: list[str]
    ) -> float:
        """Fetch one random call's output and check its digest; the digests' cost, seconds.

        Its accuracy is checked later, by :meth:`settle`.

        Raises:
            WallFailure: The output is not the one committed to.
        """
        t0 = time.monotonic()
        try:
            index = self.rng.randrange(calls)
            if self.verified >= ALWAYS_VERIFIED and self.rng.random() >= LATER_SHARE:
                self.skipped += 1
                known = self._digest_per_call_s
                return known * calls if known != float("inf") else 0.0
            with self._spent("wall_fetch"):
                client = self.client or self.session.client
                header, payload = client.request(
                    {"op": "wall", "outputs": [index]}, timeout_s=self.timeout_s
                )
                (out,) = unpack(self.session, header["tensors"], payload)
            where = f"call {index + 1} of a wall-clock batch of {calls} back-to-back calls"
            if not matches(out, digests[index], digest_seed):
                reason = f"{where} returned another output than the one its batch committed to"
                raise WallFailure(Failure(Code.STALE_RESULT, reason))
            if self.accuracy:
                self.pending.append((index, list(shifts), out, where))
            self.verified += 1
            with self._spent("wall_digest_timing"):
                return self._digest_cost(out, calls, digest_seed)
        finally:
            self.seconds += time.monotonic() - t0

    def settle(self) -> None:
        """Check each fetched output against its call's inputs, rebuilt here.

        Call once the worker has dropped its inputs.

        Raises:
            WallFailure: An output is wrong for its call's inputs.
        """
        t0 = time.monotonic()
        try:
            target = self.session.target
            for index, shifts, out, where in self.pending:
                inputs = self._inputs(index, shifts)
                with self._spent("wall_reference"):
                    block_seed = self.rng.getrandbits(62)
                    (failure,) = check_sampled(
                        target, self.scenario, [out], inputs, seed=block_seed
                    )
                if failure is not None:
                    reason = f"{where} was wrong: {failure.reason}"
                    raise WallFailure(Failure(Code.STALE_RESULT, reason))
        finally:
            self.pending, self.sets = [], None
            self.seconds += time.monotonic() - t0

    @contextlib.contextmanager
    def _spent(self, part: str) -> Iterator[None]:
        """Add the block's wall seconds to ``parts[part]``."""
        t0 = time.monotonic()
        try:
            yield
        finally:
            self.parts[part] = self.parts.get(part, 0.0) + time.monotonic() - t0

    def describe(self) -> str:
        """What was verified, for the check's line."""
        drawn = f"{self.verified} of {self.verified + self.skipped} batches"
        return f"{drawn} verified, one output each drawn at random after the batch"

    @property
    def q_numel(self) -> int:
        """Elements of a call's q where the batches flip fresh queries, else 0."""
        queries = self._queries()
        return queries[0].numel() if self.fresh else 0

    def flip_cost(self, calls: int) -> float:
        """Flipping the queries of a batch of ``calls`` as this process does it, seconds.

        Timed on the first three batches (8 flips each, the fastest per flip kept), on the
        sets in turn as the batches flip them: the least it can cost, so no more than the
        honest cost is subtracted (one set's q flipped again and again stays in cache, and
        was subtracted too cheaply where a batch's sets do not fit there together).
        """
        if not self.q_numel:
            return 0.0
        t0 = time.monotonic()
        try:
            with self._spent("wall_flip_timing"):
                return self._flip_cost(calls)
        finally:
            self.seconds += time.monotonic() - t0

    def _flip_cost(self, calls: int) -> float:
        """:meth:`flip_cost` without the accounting."""
        if self._flip_timings < 3:
            self._flip_timings += 1
            queries = [q.clone() for q in self._queries()]
            bits = [self._flips(which) for which in range(len(queries))]
            count = max(8, len(queries))
            offsets = query_flips.shifts(self._flip_timings, count, self.q_numel)

            def flips() -> None:
                for i, shift in enumerate(offsets):
                    which = i % len(queries)
                    query_flips.flip(queries[which], *bits[which], shift)

            if self.gated:
                per_flip = _device_flip_s(queries, bits, offsets)
            else:
                per_flip = self._seconds(flips, queries[0].device) / len(offsets)
            self._flip_s = min(self._flip_s, per_flip)
        return self._flip_s * calls

    def _sets(self) -> list[Inputs]:
        if self.sets is None:
            with self._spent("wall_inputs"):
                self.sets = self.session.target.make_timing_inputs(self.scenario, self.seeds)
        return self.sets

    def _queries(self) -> list[torch.Tensor]:
        """Each set's q; the rest of the sets let go (the worker holds its own meanwhile)."""
        if self.queries is None:
            sets = self._sets()
            self.fresh = fresh_queries(self.session.target, sets)
            self.queries = [s["q"] for s in sets]
            self.sets = None
            if self.queries and self.queries[0].device.type == "cuda":
                release_cached_memory()
        return self.queries

    def _flips(self, which: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Set ``which``'s base bits and sign mask, made as the worker makes them."""
        if which not in self._masks:
            q = self._queries()[which]
            self._masks[which] = (
                query_flips.base_bits(q),
                query_flips.make_mask(q, self.mask_seed),
            )
        return self._masks[which]

    def _inputs(self, index: int, shifts: Sequence[int]) -> Inputs:
        """Call ``index``'s inputs, rebuilt here as the worker built them."""
        numel = self.q_numel
        sets = self._sets()
        which = index % len(sets)
        if not numel:
            return sets[which]
        q = sets[which]["q"].clone()
        base, mask = self._flips(which)
        query_flips.flip(q, base, mask, shifts[index])
        return {**sets[which], "q": q}

    def _digest_cost(self, out: torch.Tensor, calls: int, digest_seed: int) -> float:
        """The digests of ``calls`` outputs like ``out``, as this process computes them, seconds.

        Timed three times on each of the first batches (the smallest per call is kept), on
        distinct copies of ``out`` that no cache holds together: the least the digests of a
        batch of distinct outputs can cost, so no more than the honest cost is subtracted.
        """
        if self.verified <= 2:
            # distinct copies, as the worker digests distinct outputs: one output repeated
            # would stay in cache and be timed cheaper than a batch's digests cost (on the
            # H200 this rejected FA3 itself on 67 MB prefill outputs)
            size = max(1, out.numel() * out.element_size())
            distinct = min(calls, -(-_CACHE_BYTES // size))
            copies = [out.clone() for _ in range(distinct)]
            batch = [copies[i % distinct] for i in range(calls)]
            for _ in range(3):  # the first may pay for lazy set-up; the fastest counts
                seconds = self._seconds(lambda: compute_digests(batch, digest_seed), out.device)
                self._digest_per_call_s = min(self._digest_per_call_s, seconds / calls)
        return self._digest_per_call_s * calls

    def _seconds(self, work: Callable[[], object], device: torch.device) -> float:
        """``work``'s seconds on this check's clock, the device synchronised around it."""
        sync = device.type == "cuda"
        if sync:
            torch.cuda.synchronize()
        start = self.clock()
        work()
        if sync:
            torch.cuda.synchronize()
        return self.clock() - start


@functools.cache
def _event_timer() -> CudaEventTimer:
    """The parent's device timer, made once (it holds an L2-flush buffer)."""
    return CudaEventTimer()


def _device_flip_s(
    queries: Sequence[torch.Tensor],
    bits: Sequence[tuple[torch.Tensor, torch.Tensor]],
    offsets: Sequence[int],
) -> float:
    """Device seconds per flip made as a gated batch makes them (the offset read on the device).

    Host issue hidden behind the timer's spin: a gated batch's interval holds the flips' device
    work only, and the host's launches (three a flip) would overstate it several times over.
    """
    device = queries[0].device
    positions = query_flips.positions(queries[0])
    table = torch.tensor(list(offsets), dtype=torch.int64, device=device)

    def flips() -> None:
        for i in range(len(offsets)):
            which = i % len(queries)
            query_flips.flip_at(queries[which], *bits[which], table, i, positions)

    flips()  # the first launches load their modules
    return _event_timer().time_call(flips, spin_us=2000.0).device_us / 1e6 / len(offsets)
