"""The worker's side of a gated wall-clock batch: every call queued behind the parent's gate.

The parent's side and the reasons are :mod:`evals.harness.clock_checks.gated_batch`. Here the
worker queues, on its current stream: the wait for the gate's token and the copy of the
calls' flip offsets out of the gate's page; per call, its set's q flipped at the offset read on
the device (:func:`evals.harness.clock_checks.query_flips.flip_at`) and the call; then the
outputs' digest sums (:func:`evals.harness.clock_checks.digest.device_sums`). It answers
``armed`` once all of it is queued; ``finish`` waits for the device and answers the digests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from evals.harness.clock_checks.digest import device_sums, digests, hashed
from evals.harness.clock_checks.query_flips import flip_at, positions
from evals.harness.measurement.stream_gate import DeviceGate

__all__ = ["GatedQueue"]


class GatedQueue:
    """One worker's gated batches on the sets and calls of its current wall-clock check.

    Args:
        gate: The worker's side of the gate (made before the sandbox: it registers memory).
    """

    def __init__(self, gate: DeviceGate) -> None:
        self.gate = gate
        self.outputs: list[torch.Tensor] = []
        self.sums: torch.Tensor | None = None
        self.digest_seed = 0
        self.positions: torch.Tensor | None = None

    def warm(
        self,
        queries: Sequence[torch.Tensor],
        flips: Sequence[tuple[torch.Tensor, torch.Tensor]],
        calls: Sequence[Callable[[], object]],
    ) -> None:
        """Run once, ungated, every kernel a batch will queue behind the gate.

        CUDA loads a kernel's module at its first launch and that load waits for the device,
        which a closed gate holds (:meth:`DeviceGate.queue`): each flip, each call and the
        digests' sums run here first.
        """
        self.positions = positions(queries[0])
        offsets = torch.zeros(1, dtype=torch.int64, device=queries[0].device)
        outputs = []
        for q, (base, mask), call in zip(queries, flips, calls, strict=True):
            flip_at(q, base, mask, offsets, 0, self.positions)
            outputs.append(call())
        tensors = [o for o in outputs if isinstance(o, torch.Tensor)]
        if len(tensors) == len(outputs) and tensors:
            device_sums(tensors, 0)
        torch.cuda.synchronize()

    def arm(
        self,
        token: int,
        n: int,
        digest_seed: int,
        queries: Sequence[torch.Tensor],
        flips: Sequence[tuple[torch.Tensor, torch.Tensor]],
        calls: Sequence[Callable[[], object]],
    ) -> tuple[list[object], int]:
        """Queue ``n`` calls behind the gate (token ``token``); their outputs, and how many shut.

        The second figure counts the calls that returned while the gate was still shut. Call
        ``i`` runs on set ``i % len(calls)``, its q flipped at the ``i``-th offset the parent
        writes at the opening. The outputs' sums are queued behind them where every output is
        a tensor of one shape (what :meth:`finish` hashes). A call that returns only once the
        parent has opened the gate to let the worker go waited on the device: for a full
        launch queue, or a host wait in the call itself (none returned while shut).
        """
        if self.positions is None:
            raise RuntimeError("a gated batch before its kernels were warmed")
        offsets = torch.zeros(n, dtype=torch.int64, device=self.positions.device)
        self.gate.queue(token, offsets)
        outputs: list[object] = []
        shut = n
        for i in range(n):
            j = i % len(calls)
            flip_at(queries[j], *flips[j], offsets, i, self.positions)
            outputs.append(calls[j]())
            if shut == n and self.gate.is_open(token):
                shut = i
        tensors = [o for o in outputs if isinstance(o, torch.Tensor)]
        alike = len(tensors) == n and all(
            t.shape == tensors[0].shape and t.dtype == tensors[0].dtype for t in tensors
        )
        self.sums = device_sums(tensors, digest_seed) if alike and tensors else None
        self.outputs, self.digest_seed = tensors, digest_seed
        return outputs, shut

    def finish(self) -> tuple[list[torch.Tensor], list[str]]:
        """Wait for the device; the batch's outputs and their digests (hashing waits first)."""
        sums, self.sums = self.sums, None
        outputs, self.outputs = self.outputs, []
        committed = hashed(sums, self.digest_seed) if sums is not None else None
        torch.cuda.synchronize()
        if committed is None:  # float64 outputs, or outputs of mixed shapes
            committed = digests(outputs, self.digest_seed)
        return outputs, committed
