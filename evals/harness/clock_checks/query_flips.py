"""Fresh queries for the wall-clock batches, made inside the batch by flipping signs.

Every call of a wall-clock batch needs a q no earlier call had, so that nothing computed
before can stand in for its work. A q drawn afresh (normal values) costs several times a
small call and, made ahead of the batch, would be known to the candidate's process before
the parent's clock starts: it could compute the outputs then and only copy them in the batch.
So the batch itself makes each call's q, cheaply, from secrets it is sent with: call ``i``'s
q is its input set's q with the sign of every element flipped or kept by a random mask,
read at an offset ``shift_i`` from a mask twice q's size, written in place into the set's q
(hot in cache, as the timing loop's refilled q is). Sign flips keep q's distribution (its
values are symmetric about 0) and its scale factors (fp8 descales), and no shortcut computes
``(q * signs) @ k.T`` from earlier work for another mask; with ``numel`` possible offsets a
call's q cannot be guessed ahead. One flip is one pass over q: its cost, timed by the parent
the same way, is subtracted from the batch's time.
"""

from __future__ import annotations

import functools
import random

import numpy as np
import torch

__all__ = ["base_bits", "flip", "flip_at", "make_mask", "shifts"]

_INT_OF_SIZE = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _bits(q: torch.Tensor) -> torch.Tensor:
    """``q``'s elements as signed integers of the same size (a view, same shape)."""
    return q.view(_INT_OF_SIZE[q.element_size()])


def base_bits(q: torch.Tensor) -> torch.Tensor:
    """A copy of ``q``'s bits: the base every flipped q of its set is made from."""
    return _bits(q).clone()


def make_mask(q: torch.Tensor, seed: int) -> torch.Tensor:
    """``(2 * q.numel(),)`` integers of q's element size, each the sign bit or 0, from ``seed``.

    Drawn on q's device, where both processes (the same device, the same torch) draw the same
    bits: a large GPU q's mask drawn by the host took both processes longer than the batches it
    served. One mask serves every set of a scenario (same size, same seed: made once).
    """
    return _mask(q.numel(), q.element_size(), str(q.device), seed)


@functools.lru_cache(maxsize=2)
def _mask(numel: int, size: int, device: str, seed: int) -> torch.Tensor:
    dtype = _INT_OF_SIZE[size]
    sign = torch.iinfo(dtype).min  # only the top bit set
    where = torch.device(device)
    gen = torch.Generator(device=where).manual_seed(seed)
    draws = torch.randint(0, 2, (2 * numel,), generator=gen, dtype=dtype, device=where)
    return draws.mul_(sign)


def shifts(seed: int, calls: int, numel: int) -> list[int]:
    """Each call's offset into the mask, in ``[0, numel]``, from ``seed``."""
    rng = random.Random(seed)
    return [rng.randint(0, numel) for _ in range(calls)]


def flip(q: torch.Tensor, base: torch.Tensor, mask: torch.Tensor, shift: int) -> None:
    """Write into ``q`` its base bits with the signs of ``mask[shift:shift + numel]`` flipped.

    Args:
        q: The set's query, any floating dtype, written in place (its own strides kept).
        base: :func:`base_bits` of the set's original q.
        mask: :func:`make_mask` of the set's q.
        shift: The call's offset (:func:`shifts`).
    """
    window = mask[shift : shift + q.numel()].view(q.shape)
    if q.device.type == "cpu":
        # single-threaded through numpy: torch's parallel kernel waits at a barrier for its
        # other thread, and on a busy host that wait, spun, cost 1.3 ms a flip of a 263k
        # element q, in the worker's CPU time and in the parent's timing of it alike
        np.bitwise_xor(base.numpy(), window.numpy(), out=_bits(q).numpy())
        return
    torch.bitwise_xor(base, window, out=_bits(q))


def flip_at(
    q: torch.Tensor,
    base: torch.Tensor,
    mask: torch.Tensor,
    offsets: torch.Tensor,
    call: int,
    positions: torch.Tensor,
) -> None:
    """:func:`flip` with the offset read on the device: ``offsets[call]``, known only when run.

    A gated batch's calls are queued before the parent releases their offsets
    (:mod:`evals.harness.measurement.stream_gate`), so the window into ``mask`` is gathered
    at ``positions + offsets[call]`` rather than sliced at a host integer.

    Args:
        q: The set's query, written in place.
        base: :func:`base_bits` of the set's original q.
        mask: :func:`make_mask` of the set's q.
        offsets: ``(calls,)`` int64 on q's device, each in ``[0, q.numel()]``.
        call: Which offset.
        positions: ``torch.arange(q.numel())`` (int64) on q's device, made once per set.
    """
    window = mask.take(positions + offsets[call]).view(q.shape)
    torch.bitwise_xor(base, window, out=_bits(q))
