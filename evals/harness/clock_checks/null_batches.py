"""A gated batch's own overhead, timed on calls that do nothing, where no candidate runs.

A gated batch's interval (:mod:`evals.harness.clock_checks.gated_batch`) holds more than its
calls: the opening's write and the offsets' copy, each call's flip, the outputs' digest sums,
the ``finish`` request's round trip and the host's hashing. Subtracted part by part, each
timed by the parent on its own with its host issue, those parts came to 40-130 us a call on an
H100 where the device spends a few (session 41): U fell under the device time on long batches,
and a forge reporting 0.90 of each call passed every check, 1.11x its honest twin.

So the parent runs the same batch (as many calls, the same copies of q's size and dtype, the
same flips and digests, behind the same kind of gate) with calls that return a fresh output
and do nothing, in the upstreams' worker (a process that never loads the candidate) while the
candidate's worker is stopped, and subtracts the fastest of :data:`REPEATS` such batches of
each size: ``U = (batch - null batch) / calls``. Noise only lengthens a null batch, which
only shortens U; the fastest of a few keeps that small, and the candidate has no hand in it
(what it left queued on the device before it was stopped is THREATS.md's residual).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from evals.harness.clock_checks import query_flips
from evals.harness.clock_checks.gated_batch import Blocked, GatedLink
from evals.harness.clock_checks.wall_reading import Batch
from evals.harness.clock_checks.wall_settings import WallSettings
from evals.harness.failures import Code, Failure
from evals.harness.worker_link.session import derive_seed
from evals.harness.worker_link.worker_client import WorkerFailure

__all__ = ["REPEATS", "Kept", "NullBatches"]

REPEATS = 3
"""Null batches of each size; the fastest is subtracted."""


@dataclass
class NullBatches:
    """The null batches of one check's scenario, in the upstreams' worker, by batch size.

    Attributes:
        client: The upstreams' worker (given a gate of its own).
        pause: Stops the candidate's worker for a block (``WorkerClient.paused``).
        prepare: The preparing ``wall`` request (``"impl": "null"``, the query's shape and
            dtype, the copies, gated).
        q_numel: Elements of a call's q (the flips' offsets are drawn within it).
        seed: Seeds the digests' weights and the flips' offsets.
        timeout_s: Per request, seconds.
        link: The calls a batch behind the upstreams' gate may hold.
    """

    client: Any
    pause: Callable[[], AbstractContextManager[None]]
    prepare: dict[str, Any]
    q_numel: int
    seed: int
    timeout_s: float
    link: GatedLink
    walls: dict[int, float] = field(default_factory=dict)
    """The fastest null batch of each size so far, seconds."""
    ready: bool = False

    def wall_s(self, calls: int) -> float:
        """The fastest of :data:`REPEATS` null batches of ``calls`` calls, seconds.

        Raises:
            WorkerFailure: ``harness_error``: the upstreams' worker failed or could not arm
                (never the candidate's doing).
        """
        if calls not in self.walls:
            with self.pause():
                try:
                    self._start()
                    self.walls[calls] = min(self._one(calls, i) for i in range(REPEATS))
                except WorkerFailure as exc:
                    reason = f"the upstreams' worker failed a null batch: {exc.failure.reason}"
                    raise WorkerFailure(Failure(Code.HARNESS_ERROR, reason)) from exc
        return self.walls[calls]

    def drop(self) -> None:
        """Let the null batches' inputs go (once any were made)."""
        if self.ready:
            self.client.request({"op": "wall", "drop": True}, timeout_s=self.timeout_s)
            self.ready = False

    def _start(self) -> None:
        """Prepare the worker once (a request starts it first where it is not running)."""
        if not self.ready:
            self.client.request(self.prepare, timeout_s=self.timeout_s)
            warm = {"op": "wall", "warm": derive_seed(self.seed, "digest")}
            self.client.request(warm, timeout_s=self.timeout_s)
            self.ready = True

    def _one(self, calls: int, index: int) -> float:
        """One null batch of ``calls`` behind the gate, seconds from the opening to the answer."""
        offsets = query_flips.shifts(derive_seed(self.seed, "flips", calls, index), calls,
                                     self.q_numel)  # fmt: skip
        header = {"op": "wall", "n": calls, "digest_seed": derive_seed(self.seed, "digest"),
                  "shifts": offsets}  # fmt: skip
        try:
            seconds, _ = self.link.round_trip(self.client, header, offsets, self.timeout_s,
                                              _metered)  # fmt: skip
        except Blocked:
            reason = f"a null batch of {calls} calls could not be armed"
            raise WorkerFailure(Failure(Code.HARNESS_ERROR, reason)) from None
        return seconds


def _metered(request: Callable[[], Any]) -> tuple[float, Any]:
    """The parent's clock around ``request``, as the candidate's gated batches are timed."""
    t0 = time.perf_counter()
    answer = request()
    return time.perf_counter() - t0, answer


@dataclass(frozen=True)
class Kept:
    """A passed gated check, to be judged again later against fresh null batches.

    Judged once no process of the candidate exists
    (:mod:`evals.harness.clock_checks.null_recheck`).

    Attributes:
        key: The check's name in the scenario's ``checks`` (``wall_clock``, ...).
        batches: Its batches, each with the null batch subtracted then.
        reported: The candidate's reported figure, microseconds.
        settings: The bound's settings.
        max_calls: The planned size's ceiling (``wall_clock.most_calls``).
        nulls: The null batches it was judged against (their request, seed and link).
    """

    key: str
    batches: tuple[Batch, ...]
    reported: float
    settings: WallSettings
    max_calls: int | None
    nulls: NullBatches
