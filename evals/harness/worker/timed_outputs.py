"""The outputs of timed candidate calls, kept until the parent picks which to check."""

from __future__ import annotations

import random
from collections.abc import Callable

import torch

from evals.harness.failures import Code, Failure
from evals.harness.worker.errors import CandidateError

__all__ = ["TimedOutputs"]


class TimedOutputs:
    """The outputs of timed candidate calls, by trial, until the parent picks which to check.

    Kept within ``cap_bytes``: past it, a kept output is dropped at random (an OS-seeded
    generator, not the run's seeds), so which outputs survive cannot be predicted either.
    """

    def __init__(self, cap_bytes: int) -> None:
        self.cap_bytes = cap_bytes
        self.outputs: dict[int, torch.Tensor] = {}
        self._trial: int | None = None
        self._rng = random.SystemRandom()

    def expect(self, trial: int | None) -> None:
        """The next call is timed trial ``trial`` of the candidate (None: not the candidate)."""
        self._trial = trial

    def wrap(self, fn: Callable[[], torch.Tensor]) -> Callable[[], None]:
        """``fn``, keeping its output when it is a timed call (warm-up calls are not)."""

        def run() -> None:
            out, trial = fn(), self._trial
            self._trial = None
            if trial is None or not isinstance(out, torch.Tensor):
                if trial is not None:
                    raise CandidateError(
                        Failure(Code.WRONG_SIGNATURE, "a timed call returned no Tensor")
                    )
                return
            self.outputs[trial] = out
            while len(self.outputs) > 1 and self._bytes() > self.cap_bytes:
                del self.outputs[self._rng.choice(sorted(self.outputs))]

        return run

    def _bytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.outputs.values())
