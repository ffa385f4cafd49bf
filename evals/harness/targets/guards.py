"""Worker-side guards around candidate calls: inputs left untouched, outputs fresh.

A candidate may not modify its inputs (except what the contract allows, e.g. a KV-cache
append) and must return a new tensor that shares memory with no input and no earlier output:
returning an input or a cached result is how result-reuse hacks look from outside.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch

from evals.harness.failures import Code, Failure

CLONE_LIMIT_BYTES = 2 << 30
"""Inputs up to this size are cloned for an exact comparison; larger ones are checksummed."""
KEEP_INPUTS_BYTES = 2 << 30
"""Recent input sets the worker keeps alive (so fresh inputs never reuse their addresses)."""
KEEP_TIMED_BYTES = 2 << 30
"""Outputs of timed candidate calls the worker keeps until the parent picks which to check."""


def _span(t: torch.Tensor) -> tuple[int, int]:
    storage = t.untyped_storage()
    start = storage.data_ptr()
    return start, start + storage.nbytes()


def _overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.device != b.device:
        return False
    (a0, a1), (b0, b1) = _span(a), _span(b)
    return a0 < b1 and b0 < a1


def _tensors(inputs: Mapping[str, Any]) -> dict[str, torch.Tensor]:
    return {k: v for k, v in inputs.items() if isinstance(v, torch.Tensor)}


CHECKSUM_CHUNK = 1 << 26
"""Bytes per checksum step, so that checksumming a 34 GB cache needs little extra memory."""


def input_bytes(inputs: Mapping[str, Any]) -> int:
    """Total bytes of the tensors in ``inputs``."""
    return sum(t.numel() * t.element_size() for t in _tensors(inputs).values())


def too_large_to_copy_twice(inputs: Mapping[str, Any]) -> bool:
    """Whether the anti-caching probe runs in place on ``inputs`` (no room for two copies).

    The worker and the parent each decide it, from the same inputs: the parent never takes the
    worker's word for which probe ran.
    """
    return input_bytes(inputs) > CLONE_LIMIT_BYTES


def _checksum(t: torch.Tensor) -> tuple[float, float]:
    """Sum and position-weighted sum of the bytes of ``t``, computed in chunks."""
    flat = t.detach().reshape(-1).view(torch.uint8)
    total, weighted = 0.0, 0.0
    for start in range(0, flat.numel(), CHECKSUM_CHUNK):
        chunk = flat[start : start + CHECKSUM_CHUNK].to(torch.float64)
        pos = torch.arange(
            start + 1, start + 1 + chunk.numel(), device=chunk.device, dtype=torch.float64
        ).remainder_(65521)
        total += float(chunk.sum())
        weighted += float((chunk * pos).sum())
    return total, weighted


MutationCheck = Callable[
    [str, "torch.Tensor | None", torch.Tensor, Mapping[str, Any]], "str | None"
]
"""``check(name, before, after, inputs)``: why the contents ``after`` of the mutable input
``name`` are not what the contract makes of ``before`` (its clone, or None when too large to
clone: then only the modified part is checked) and ``inputs``; None when they are."""


class InputGuard:
    """Remembers inputs before a call, to tell afterwards whether the candidate changed them.

    Inputs the contract lets the candidate modify are skipped, or, when ``mutable`` maps them
    to a :data:`MutationCheck`, checked against what the contract says they must become.
    """

    def __init__(
        self, inputs: Mapping[str, Any], mutable: Iterable[str] | Mapping[str, MutationCheck] = ()
    ) -> None:
        names = set(mutable)
        watched = {k: v for k, v in _tensors(inputs).items() if k not in names}
        self.exact = input_bytes(watched) <= CLONE_LIMIT_BYTES
        self._before = {k: (t.clone() if self.exact else _checksum(t)) for k, t in watched.items()}
        self._inputs = watched
        self._all = inputs
        checks = dict(mutable) if isinstance(mutable, Mapping) else {}
        tensors = _tensors(inputs)
        self._checks = {k: c for k, c in checks.items() if k in tensors}
        small = input_bytes({k: tensors[k] for k in self._checks}) <= CLONE_LIMIT_BYTES
        self._mutable_before = {k: tensors[k].clone() if small else None for k in self._checks}

    def modified(self) -> Failure | None:
        """The first watched input whose contents changed, as a failure.

        A mutable input whose contents differ from its check's expectation fails as
        ``inaccurate`` (the modification is part of the result).
        """
        for name, check in self._checks.items():
            why = check(name, self._mutable_before[name], self._all[name], self._all)
            if why is not None:
                return Failure(Code.INACCURATE, f"input {name!r} after the call: {why}")
        for name, t in self._inputs.items():
            before = self._before[name]
            same = (
                torch.equal(before, t)
                if isinstance(before, torch.Tensor)
                else (before == _checksum(t))
            )
            if not same:
                return Failure(Code.INPUT_MODIFIED, f"the candidate modified its input {name!r}")
        return None


def aliasing(
    out: torch.Tensor, inputs: Mapping[str, Any], earlier: Iterable[torch.Tensor]
) -> Failure | None:
    """Whether ``out`` shares memory with an input or an earlier (still alive) output."""
    for name, t in _tensors(inputs).items():
        if _overlaps(out, t):
            return Failure(Code.OUTPUT_ALIASED, f"the output shares memory with the input {name!r}")
    for prev in earlier:
        if prev is out or _overlaps(out, prev):
            reason = "the output reuses the memory of an earlier output (result reuse)"
            return Failure(Code.OUTPUT_ALIASED, reason)
    return None
