"""A wall-clock batch queued behind the parent's gate: the host's issue work out of the interval.

An ungated batch times the worker's host issue with its device work, so a candidate whose
host issue overlaps its kernels can pad the one to hide a forged report of the other
(THREATS.md, Known limits). Gated, the worker queues the whole batch behind a gate
(:mod:`evals.harness.measurement.stream_gate`) and says it is armed; only then does the parent
write the calls' flip offsets and the token into the gate's page, and its clock runs from
that write to the answer of a ``finish`` request. The device copies the offsets in when it
sees the token, so nothing queued can be computed before the opening, and the answer carries
each output's digest, whose device sums were queued behind the calls: it cannot exist
before the outputs do. What the interval holds is the batch's device work (flips, calls,
digests) and one request's round trip; the parent subtracts the same batch of calls that do
nothing (:mod:`evals.harness.clock_checks.null_batches`), made ready by
:mod:`evals.harness.clock_checks.gated_setup`.

Everything queued behind a closed gate waits in the stream's launch queue, which holds
about a thousand operations before the next launch blocks; the host then waits for the
device, which waits for the gate (the likely cause of the prototype's hang on an H100 in
session 36; whatever blocks the arming, the check below holds). A worker that has not said it is
armed within :data:`ARM_TIMEOUT_S` is let go (the gate opened for it), its batch thrown away,
and the link's ceiling on calls cut for every later batch of the check: halved, and to three
quarters of the calls the worker says returned while the gate was shut where fewer and still
above :data:`MIN_ARMED_CALLS` (the figure is the candidate's: it may speed the cut, never take
the ceiling under that floor without a blocked batch of that size failing). Where none
did, the batch's first call waited on the device from the host (a synchronisation inside the
call, which no launch queue explains): the check fails at once (``host_work``), as the
contracts say (a host wait belongs to a shape's first use).
"""

from __future__ import annotations

import math
import secrets
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evals.harness.failures import Code, Failure

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from evals.harness.measurement.stream_gate import Gate

__all__ = [
    "ARM_TIMEOUT_S",
    "MIN_ARMED_CALLS",
    "Blocked",
    "GatedLink",
    "blocked_failure",
    "cold_copies",
]

ARM_TIMEOUT_S = 5.0
"""Seconds the parent waits for ``armed`` before it opens the gate to let the worker go."""
MAX_CALLS = 128
"""Calls of a gated batch at first: with three flip launches and a call's few, well within
the launch queue (s36: 128 calls of five or six operations armed, with three more not)."""


MAX_COPIES = 16
"""Most copies of a round's input sets a gated batch cycles through."""


def cold_copies(set_bytes: int, sets: int, l2_bytes: int) -> int:
    """Copies of a round's ``sets`` input sets (``set_bytes`` each) that fill twice the L2.

    A gated batch flushes nothing between its calls (a flush in the candidate's process binds
    nothing: it could be skipped), so its inputs are kept cold by cycling through enough
    copies that a set's inputs were evicted by the others' since its last call.
    """
    if set_bytes <= 0 or sets <= 0:
        return 1
    return max(1, min(MAX_COPIES, math.ceil(2 * l2_bytes / (sets * set_bytes))))


MIN_ARMED_CALLS = 16
"""A batch of this many calls or fewer that cannot be armed fails the check: an honest call
queues a few operations (16 calls with their flips fit the launch queue at up to about 60
each), while a candidate that blocked its batches down to a few calls would spread the
batch's allowance (``overhead_us``) over them and loosen its bound."""


class Blocked(Exception):
    """The worker did not arm in time; the batch was thrown away (see the module).

    Args:
        waited: No call returned while the gate was shut: the first call waited on the device.
    """

    def __init__(self, *, waited: bool = False) -> None:
        super().__init__("waited" if waited else "blocked")
        self.waited = waited


@dataclass
class GatedLink:
    """How many calls a batch behind one worker's gate may hold, learnt over its checks.

    The gate itself is the worker client's (``client.gate``: made afresh at each start).

    Attributes:
        ceiling: Calls a batch may have at most; halved each time arming blocks.
        blocked: Batches thrown away because arming blocked.
    """

    ceiling: int = MAX_CALLS
    blocked: int = 0

    def round_trip(
        self,
        client: Any,
        header: dict[str, Any],
        offsets: Sequence[int],
        timeout_s: float | None,
        meter: Callable[[Callable[[], Any]], tuple[float, Any]],
    ) -> tuple[float, dict[str, Any]]:
        """Arm, open, finish: the seconds from the opening to the ``finish`` answer.

        ``client`` is the worker's client (its ``gate`` the parent's side of the gate);
        ``header`` the ungated batch's request; ``offsets`` its calls' flip offsets (sent only
        through the gate). Raises :class:`Blocked` when arming blocked.
        """
        gate: Gate = client.gate
        payload = b"".join(int(o).to_bytes(8, "little") for o in offsets)
        token = secrets.randbits(32) or 1
        lock, armed, opened_early = threading.Lock(), threading.Event(), threading.Event()

        def let_go() -> None:
            with lock:
                if not armed.is_set():
                    opened_early.set()
                    gate.open(token, payload)

        timer = threading.Timer(ARM_TIMEOUT_S, let_go)
        timer.start()
        try:
            request = {key: value for key, value in header.items() if key != "shifts"}
            armed_answer, _ = client.request({**request, "gated": token}, timeout_s=timeout_s)
        finally:
            with lock:
                armed.set()
            timer.cancel()
        finish = {"op": "wall", "finish": True}
        if opened_early.is_set():
            try:
                client.request(finish, timeout_s=timeout_s)
            finally:
                gate.shut()
            shut = _queued_shut(armed_answer, len(offsets))
            self.blocked += 1
            self.ceiling = _cut(min(self.ceiling, len(offsets)), shut)
            raise Blocked(waited=shut == 0)

        def opened_and_finished() -> dict[str, Any]:
            gate.open(token, payload)
            answer, _ = client.request(finish, timeout_s=timeout_s)
            return dict(answer)

        try:
            return meter(opened_and_finished)
        finally:
            gate.shut()


def _cut(calls: int, shut: int) -> int:
    """The ceiling after a batch of ``calls`` blocked, ``shut`` of them queued before the opening.

    Three quarters of what fit where that is below the halving and above
    :data:`MIN_ARMED_CALLS`; else the halving, the only way under that floor.
    """
    halved = max(1, calls // 2)
    fit = shut * 3 // 4
    return min(halved, fit) if fit > MIN_ARMED_CALLS else halved


def _queued_shut(answer: Any, calls: int) -> int:
    """Calls the worker says returned before the gate opened (all of them where it says none).

    The candidate's process says it: zero fails it at once, a smaller figure only speeds the
    cut down to the floor (:func:`_cut`), a larger one leaves the halving.
    """
    said = answer.get("queued_shut") if isinstance(answer, dict) else None
    return min(said, calls) if isinstance(said, int) and said >= 0 else calls


def blocked_failure(link: GatedLink, calls: int, *, waited: bool = False) -> Failure:
    """Why the check fails when its batches cannot be armed.

    A batch of ``calls`` (at most :data:`MIN_ARMED_CALLS`) that blocked, or one whose first
    call waited on the device (``waited``).
    """
    if waited:
        reason = (
            "a call waited on the host for the device while the wall-clock check's gate held "
            "it (a synchronisation inside the call): the contract allows a host wait only on "
            "a shape's first use"
        )
        return Failure(Code.HOST_WORK, reason)
    reason = (
        f"a batch of {calls} calls fills the stream's launch queue behind the wall-clock "
        f"check's gate (arming blocked {link.blocked} times): dozens of operations a call"
    )
    return Failure(Code.TIMING_MISMATCH, reason)
