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

A large q's offsets are multiples of a grain (:func:`grain`), so that a gated batch, which reads
each offset on the device, gathers the window row by row with a small index: per element it
built and read an int64 index of q's size, eight times q's bytes, and on the H100 its flips
took about as long as the prefill calls they served (686 us a call beside a 708 us call, s38),
which made the parent's figure, the batch less what it subtracts, a small difference of large
ones. At least :data:`MIN_OFFSETS` offsets remain: no process computes that many outputs of a
call on millions of query elements ahead of a batch.
"""

from __future__ import annotations

import functools
import math
import random

import numpy as np
import torch

__all__ = [
    "MIN_OFFSETS",
    "base_bits",
    "flip",
    "flip_at",
    "grain",
    "make_mask",
    "positions",
    "shifts",
]

_INT_OF_SIZE = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
MIN_OFFSETS = 1 << 18
"""Distinct offsets a q of at least twice this many elements keeps; a smaller q keeps all."""


def grain(numel: int) -> int:
    """The step between a q of ``numel`` elements' offsets: 1, or a power of two for a large q.

    The largest power of two that leaves at least :data:`MIN_OFFSETS` offsets.
    """
    if numel < 2 * MIN_OFFSETS:
        return 1
    return 1 << int(math.log2(numel // MIN_OFFSETS))


def _bits(q: torch.Tensor) -> torch.Tensor:
    """``q``'s elements as signed integers of the same size (a view, same shape)."""
    return q.view(_INT_OF_SIZE[q.element_size()])


def base_bits(q: torch.Tensor) -> torch.Tensor:
    """A copy of ``q``'s bits: the base every flipped q of its set is made from."""
    return _bits(q).clone()


def make_mask(q: torch.Tensor, seed: int) -> torch.Tensor:
    """About ``2 * q.numel()`` integers of q's element size, each the sign bit or 0, from ``seed``.

    Twice q's size in whole grains (:func:`grain`): a window at any offset fits, row by row.

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
    step = grain(numel)
    length = 2 * step * -(-numel // step)
    draws = torch.randint(0, 2, (length,), generator=gen, dtype=dtype, device=where)
    return draws.mul_(sign)


def shifts(seed: int, calls: int, numel: int) -> list[int]:
    """Each call's offset into the mask, from ``seed``: a multiple of :func:`grain`, <= numel."""
    rng = random.Random(seed)
    step = grain(numel)
    return [rng.randint(0, numel // step) * step for _ in range(calls)]


def positions(q: torch.Tensor) -> torch.Tensor:
    """The row index :func:`flip_at` gathers ``q``'s window by: one int64 per grain of q."""
    return torch.arange(-(-q.numel() // grain(q.numel())), device=q.device)


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
    (:mod:`evals.harness.measurement.stream_gate`), so the window into ``mask`` is gathered,
    a grain at a time, at rows ``positions + offsets[call] / grain`` rather than sliced at a
    host integer.

    Args:
        q: The set's query, written in place.
        base: :func:`base_bits` of the set's original q.
        mask: :func:`make_mask` of the set's q.
        offsets: ``(calls,)`` int64 on q's device, each a multiple of :func:`grain` in
            ``[0, q.numel()]`` (:func:`shifts`).
        call: Which offset.
        positions: :func:`positions` of q, made once per set.
    """
    numel = q.numel()
    step = grain(numel)
    if step == 1:  # a small q: no division queued per call
        window = mask.take(positions + offsets[call])
    else:
        rows = mask.view(-1, step).index_select(0, positions + offsets[call] // step)
        window = rows.view(-1)[:numel]
    torch.bitwise_xor(base, window.view(q.shape), out=_bits(q))
