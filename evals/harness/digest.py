"""Commitments to a batch of outputs: one float64 projection per output, cheap to check.

The worker of the wall-clock check (:mod:`evals.harness.worker_wall`) answers a batch of
back-to-back calls with one digest per call: the output's projection on a random vector drawn
from a seed the parent sends. Only then does the parent choose, at random, which outputs to
fetch and verify: a fetched output must have the committed digest and be right. A process
that skipped the work of a call can commit only to what it had, so the call's output, if
chosen, is either wrong or not the one committed to; and the projection of the right output
cannot be had without computing that output (every row of an attention output needs its own
softmax over all its keys).

On the CPU the projection runs single-threaded through numpy (torch's parallel kernels stall
for tens of milliseconds when the cores are oversubscribed, and this cost lands inside the
parent's clock); on a GPU through torch on the device.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

__all__ = ["DIGEST_RTOL", "digests", "matches", "warm"]

DIGEST_RTOL = 1e-9
"""Relative agreement two honest projections of one output reach (the products are rounded
alike in both processes; only the float64 summation order differs: about 1e-16 per term), far
tighter than any guess of a projection not computed."""

_VECTORS: dict[tuple[int, int, str], torch.Tensor | np.ndarray] = {}
_LARGE_BYTES = 1 << 20
"""Outputs from this size are projected one at a time (no stacked copy of the batch)."""


def _vector(numel: int, seed: int, device: torch.device) -> torch.Tensor | np.ndarray:
    """The projection vector: ``(numel,)`` float64 standard normal from ``seed`` (cached)."""
    key = (numel, seed, str(device))
    if key not in _VECTORS:
        if len(_VECTORS) >= 4:
            _VECTORS.pop(next(iter(_VECTORS)))
        if device.type == "cpu":
            _VECTORS[key] = np.random.default_rng(seed).standard_normal(numel)
        else:
            gen = torch.Generator(device=device).manual_seed(seed)
            _VECTORS[key] = torch.randn(numel, generator=gen, device=device, dtype=torch.float64)
    return _VECTORS[key]


def warm(numel: int, seed: int, device: str | torch.device) -> None:
    """Make the vector for outputs of ``numel`` elements on ``device`` now, outside any clock."""
    where = torch.device(device)
    if where.type == "cuda" and where.index is None:  # outputs name their device's index
        where = torch.device("cuda", torch.cuda.current_device())
    _vector(numel, seed, where)


def _as_float64(output: torch.Tensor) -> np.ndarray:
    """A CPU tensor's values as a flat float64 array, single-threaded."""
    flat = output.detach().reshape(-1)
    if flat.dtype == torch.bfloat16:  # numpy has no bfloat16: its bits are float32's top half
        bits = flat.view(torch.int16).numpy().astype(np.uint32) << 16
        return bits.view(np.float32).astype(np.float64)
    if flat.dtype in (torch.float32, torch.float64, torch.float16):
        return flat.numpy().astype(np.float64)
    return flat.to(torch.float64).numpy()


def _project(outputs: Sequence[torch.Tensor], seed: int, *, absolute: bool = False) -> list[float]:
    """Projections of same-shaped outputs on one device (``absolute``: of |x| on |r|)."""
    first = outputs[0]
    vector = _vector(first.numel(), seed, first.device)
    if isinstance(vector, np.ndarray):
        # one output at a time: its float64 copy is freed before the next is made, so every
        # output reuses the same warm memory (a batch's copies kept together cost 3-5x as
        # much, in fresh pages, as the parent's timing of one output's digest shows)
        if absolute:
            weights = np.abs(vector)
            return [float(np.einsum("i,i->", np.abs(_as_float64(o)), weights)) for o in outputs]
        return [float(np.einsum("i,i->", _as_float64(o), vector)) for o in outputs]
    # on the device: each element's product with the vector in the output's own dtype (exact
    # IEEE rounding, the same in both processes), summed in float64: one read of the output
    # and no float64 copy of it (a 64 MiB prefill output costs ~50 us, not ~300)
    weights = vector.to(first.dtype)
    if absolute:
        weights = weights.abs()
    if first.numel() * first.element_size() >= _LARGE_BYTES:
        sums = [_weighted_sum(o.reshape(-1), weights, absolute) for o in outputs]
        return [float(x) for x in torch.stack(sums).tolist()]
    flat = torch.stack([o.reshape(-1) for o in outputs])
    return [float(x) for x in _weighted_sum(flat, weights, absolute).tolist()]


def _weighted_sum(flat: torch.Tensor, weights: torch.Tensor, absolute: bool) -> torch.Tensor:
    """Sum over the last dimension of ``flat * weights`` (``|flat|`` if ``absolute``), float64."""
    product = (flat.abs() if absolute else flat) * weights
    return product.sum(dim=-1, dtype=torch.float64)


def digests(outputs: Sequence[torch.Tensor], seed: int) -> list[float]:
    """The projection of each output (any shape; flattened, in float64) on the seed's vector.

    Outputs of one shape, dtype and device (a batch's calls) share one vector; others are
    projected one at a time. A non-finite output gives a non-finite digest.
    """
    if not outputs:
        return []
    first = outputs[0]
    if all(o.shape == first.shape and o.dtype == first.dtype and o.device == first.device
           for o in outputs):  # fmt: skip
        return _project(outputs, seed)
    return [_project([o], seed)[0] for o in outputs]


def matches(output: torch.Tensor, digest: float, seed: int) -> bool:
    """Whether ``output`` is the one ``digest`` committed to (within :data:`DIGEST_RTOL`)."""
    mine = _project([output], seed)[0]
    if not (math.isfinite(mine) and math.isfinite(digest)):  # the same non-finite output
        return (math.isnan(mine) and math.isnan(digest)) or mine == digest
    scale = _project([output], seed, absolute=True)[0]
    return abs(mine - digest) <= DIGEST_RTOL * scale + 1e-300
