"""A candidate's failures inside the worker, and the memory its outputs come from.

:class:`CandidateError` carries the failure the parent reports; :func:`candidate_error` and
:func:`classify_call_error` turn an exception from a candidate call into one;
:func:`poisoned_allocations` prepares fresh allocations so unwritten output shows.
"""

from __future__ import annotations

import contextlib
import ctypes
import re
from collections.abc import Iterator

import torch

from evals.harness.failures import Code, Failure, one_line
from evals.harness.targets import OutputSpec

__all__ = ["CandidateError", "candidate_error", "classify_call_error", "poisoned_allocations"]

_SIGNATURE_ERROR = re.compile(
    r"Declaration:|Expected a value of type|argument\(s\)|missing value for argument"
)
_M_PERTURB = -6  # glibc mallopt parameter
_PERTURB_BYTE = 0xC3  # frees fill 0xC3.. (float -391.5), allocations 0x3C.. (float 0.0115)
_NO_KERNEL = re.compile(r"Could not run '[^']+' with arguments from the '[^']+' backend")


class CandidateError(Exception):
    """The candidate misbehaved; carries the failure to report.

    ``fatal`` means the worker cannot go on (a CUDA error poisons the process's context).
    """

    def __init__(self, failure: Failure, *, fatal: bool = False) -> None:
        super().__init__(failure.reason)
        self.failure = failure
        self.fatal = fatal


def candidate_error(exc: BaseException) -> CandidateError:
    """Wrap an exception from a candidate call, marking CUDA errors fatal."""
    text = str(exc)
    fatal = "CUDA error" in text or "cudaError" in text or "illegal memory access" in text
    return CandidateError(classify_call_error(exc), fatal=fatal)


@contextlib.contextmanager
def poisoned_allocations(poison: str, spec: OutputSpec) -> Iterator[None]:
    """Prepare the memory a candidate's output will come from.

    ``"nan"``: torch's deterministic mode fills every ``at::empty`` with NaN, so output
    elements a candidate never writes show up as NaN. ``"finite"``: fresh allocations hold a
    finite pattern (glibc's malloc perturbation on the CPU; zeroed recently freed blocks of
    the output's size for the GPU caching allocator), so unwritten elements read back finite
    while computed NaNs stay NaN: comparing the two runs tells the two apart.
    """
    if poison == "finite":
        scratch = [torch.zeros(spec.shape, dtype=spec.dtype, device=spec.device) for _ in range(4)]
        del scratch
        with _malloc_perturbed():
            yield
        return
    if poison != "nan":
        yield
        return
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True  # type: ignore[attr-defined]
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(False)


@contextlib.contextmanager
def _malloc_perturbed() -> Iterator[None]:
    """Make glibc fill new and freed heap blocks with a finite byte pattern (0x3C / 0xC3)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc
        yield
        return
    mallopt(_M_PERTURB, _PERTURB_BYTE)
    try:
        yield
    finally:
        mallopt(_M_PERTURB, 0)


def classify_call_error(exc: BaseException) -> Failure:
    """Turn an exception from a candidate call into a failure."""
    text = str(exc)
    if _NO_KERNEL.search(text):
        return Failure(Code.MISSING_ENTRY_POINT, f"no kernel for this device: {one_line(text)}")
    if isinstance(exc, TypeError) or _SIGNATURE_ERROR.search(text):
        return Failure(Code.WRONG_SIGNATURE, f"wrong signature: {one_line(text)}")
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return Failure(Code.EXCEPTION, f"candidate raised {type(exc).__name__}: {first}")
