"""Commitments to a batch of outputs: one short hash per output, checked exactly.

The worker of the wall-clock check (:mod:`evals.harness.worker.wall`) answers a batch of
back-to-back calls with one digest per call, made inside the parent's clock. Only then does
the parent choose, at random, which outputs to fetch and verify: a fetched output must have
the committed digest and be right. A process that skipped the work of a call can commit only
to what it had, so the call's output, if chosen, is either wrong or not the one committed to.

A digest must bind every bit of its output, not only its value to within the accuracy rule:
a linear projection (what this module made before) leaves the tolerance as slack, and a
process that committed to a guess could later compute the right output outside the clock and
nudge it, element by element within the tolerance, until its projection hit the guess.

- On the CPU a digest is SHA-256 over the output's bytes (with the seed in front): any change
  of any bit is a new digest, and no nudging hits a committed value. It runs single-threaded,
  allocates nothing and costs about a nanosecond per bf16 element, the same in both
  processes (a float64 projection cost 1.5-5x as much, with page faults that made its cost
  vary 3x between the worker and the parent's timing of it).
- On a GPU the bytes do not leave the device: each run of consecutive elements is reduced
  there to one exact integer (the elements' bit patterns weighted by random integers from
  the seed, bounded so that the sum cannot overflow: exact, so any reduction order gives the
  same number), and
  SHA-256 is taken over those sums on the host. A process can then nudge a run only within
  the tolerance, which moves its sum by at most the run's length in tolerance steps, so it
  would need its committed guess to be within about the square root of the run's length of
  tolerances of the right output: the runs are 64 elements for outputs up to 262k elements
  (about 8 tolerances), longer for larger outputs (the host hashes 4096 sums at most), so a
  large output binds more loosely: a 67 MB one in runs of 8192 (about 90 tolerances).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

import torch

__all__ = ["device_sums", "digests", "hashed", "matches", "run_length", "warm"]

_DIGEST_CHARS = 32
"""Hex characters of SHA-256 kept per digest (128 bits)."""
_RUN = 64
"""Elements reduced to one integer sum on a GPU, for outputs up to :data:`_MAX_SUMS` runs."""
_MAX_SUMS = 1 << 12
"""Sums per output on a GPU before its runs grow longer: the host hashes at most this many
(16 KB; 64k sums of a 67 MB output cost the H200's host about 300 us a call, more than the
device's part, and host work is the part a busy worker's timing spreads most)."""
_LARGE_BYTES = 1 << 20
"""GPU outputs from this size are reduced one at a time (no stacked copy of the batch)."""
_BITS = {1: torch.int8, 2: torch.int16, 4: torch.int32}
"""Integer views of an output's elements, by element size in bytes."""

_WEIGHTS: dict[tuple[int, int, str, torch.dtype, int], torch.Tensor] = {}
"""Weights by (run, seed, device, width, bound), the last few kept."""


def run_length(numel: int) -> int:
    """Elements reduced to one sum on a GPU for an output of ``numel`` elements."""
    if numel <= _RUN * _MAX_SUMS:
        return _RUN
    return 1 << math.ceil(math.log2(numel / _MAX_SUMS))


def _wide(run: int, element_size: int) -> torch.dtype:
    """The products' and sums' integer type (int32 or int64).

    int32 for 16-bit patterns in runs up to 2**14: one pass each with no wider copy (memory
    traffic is the cost on a GPU).
    """
    return torch.int32 if element_size <= 2 and run <= 1 << 14 else torch.int64


def _bound(run: int, wide: torch.dtype) -> int:
    """Weights' bound: a run's sum of bit pattern times weight stays exact in ``wide``.

    int32: ``2**15 * bound * run <= 2**31``; int64: ``2**31 * 2**15 * run`` far below ``2**63``.
    """
    return max(2, (1 << 16) // run) if wide == torch.int32 else 1 << 15


def _weights(run: int, seed: int, device: torch.device, element_size: int) -> torch.Tensor:
    """``(run,)`` nonzero integer weights from ``seed``, bounded by :func:`_bound` (cached).

    Every run of an output is weighted alike: a run binds its own elements whatever weights
    the others have, and a vector the length of a run costs no memory traffic beside the
    output's (a weight per element doubled a large output's digest cost on the H200).
    """
    wide = _wide(run, element_size)
    bound = _bound(run, wide)
    key = (run, seed, str(device), wide, bound)
    if key not in _WEIGHTS:
        if len(_WEIGHTS) >= 8:
            _WEIGHTS.pop(next(iter(_WEIGHTS)))
        gen = torch.Generator(device=device).manual_seed(seed)
        w = torch.randint(1 - bound, bound, (run,), generator=gen, device=device,
                          dtype=torch.int64)  # fmt: skip
        _WEIGHTS[key] = torch.where(w == 0, torch.ones_like(w), w).to(wide)
    return _WEIGHTS[key]


def warm(numel: int, seed: int, device: str | torch.device) -> None:
    """Make a GPU's weights for outputs of ``numel`` elements now, outside any clock.

    Both widths are made: the worker does not know its outputs' dtype before the calls.
    """
    where = torch.device(device)
    if where.type == "cpu":
        return  # the CPU's digest needs nothing made ahead
    if where.index is None:  # outputs name their device's index
        where = torch.device("cuda", torch.cuda.current_device())
    for element_size in (2, 4):
        _weights(run_length(numel), seed, where, element_size)


def _hash(seed: int, data: bytes | memoryview) -> str:
    """SHA-256 of the seed and ``data``, shortened."""
    h = hashlib.sha256(seed.to_bytes(8, "little", signed=False))
    h.update(data)
    return h.hexdigest()[:_DIGEST_CHARS]


def _host_bytes(output: torch.Tensor) -> memoryview:
    """A CPU tensor's bytes, without a copy where it is contiguous."""
    flat = output.detach().contiguous().reshape(-1)
    return flat.view(torch.uint8).numpy().data


def device_sums(outputs: Sequence[torch.Tensor], seed: int) -> torch.Tensor | None:
    """The outputs' runs' exact weighted sums, on their device, queued without a sync.

    ``outputs`` share shape, dtype and a CUDA device; the result is ``(len(outputs), runs)``
    integers, hashed by :func:`hashed` once the device is done. None for float64 outputs,
    which have no exact int64 sum (:func:`digests` hashes their bytes instead). A gated batch
    queues these behind its calls, so its answer cannot exist before their outputs do.
    """
    first = outputs[0]
    bits_dtype = _BITS.get(first.element_size())
    if bits_dtype is None:
        return None
    numel = first.numel()
    run = run_length(numel)
    runs = math.ceil(numel / run)
    weights = _weights(run, seed, first.device, first.element_size())

    def sums(flat: torch.Tensor) -> torch.Tensor:
        bits = flat.view(bits_dtype)
        if runs * run != numel:  # odd sizes (small): the last run padded with zeros
            bits = torch.nn.functional.pad(bits, (0, runs * run - numel))
        products = bits.view(*bits.shape[:-1], runs, run) * weights  # one pass, to int32/64
        return products.sum(dim=-1, dtype=weights.dtype)

    if numel * first.element_size() >= _LARGE_BYTES:
        return torch.stack([sums(o.detach().reshape(-1)) for o in outputs])
    return sums(torch.stack([o.detach().reshape(-1) for o in outputs]))


def hashed(sums: torch.Tensor, seed: int) -> list[str]:
    """The digests of :func:`device_sums`' rows (waits for the device)."""
    return [_hash(seed, row.tobytes()) for row in sums.cpu().numpy()]


def digests(outputs: Sequence[torch.Tensor], seed: int) -> list[str]:
    """A digest of each output (any shape and device; see the module), one string each.

    Outputs of one shape, dtype and device (a batch's calls) are reduced together on a GPU.
    """
    if not outputs:
        return []
    first = outputs[0]
    if first.device.type == "cpu":
        return [_hash(seed, _host_bytes(o)) for o in outputs]
    if all(o.shape == first.shape and o.dtype == first.dtype and o.device == first.device
           for o in outputs):  # fmt: skip
        queued = device_sums(outputs, seed)
        if queued is None:  # float64 outputs: no exact int64 sum; hash their bytes
            return [_hash(seed, _host_bytes(o.detach().cpu())) for o in outputs]
        return hashed(queued, seed)
    return [digests([o], seed)[0] for o in outputs]


def matches(output: torch.Tensor, digest: str, seed: int) -> bool:
    """Whether ``output`` is the one ``digest`` committed to (exactly)."""
    return isinstance(digest, str) and digests([output], seed)[0] == digest
