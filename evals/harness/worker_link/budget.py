"""The run's time budget: the candidate's own seconds, past which it gets no more time.

A caller with a time limit of its own (the Inspect scorer: an hour for a ``score``) gives the
harness a budget below it (``--time-budget``). Without one, a candidate whose calls are slow
but each under its request's limit made a dev run outlast the caller's limit: the run ended
without a verdict, a fault the scorer books as the harness's, so the sample was retried and
left out of every statistic: a failing agent's way out. The budget counts the candidate's own
seconds, its build's and its worker's requests' (never a wait for the device's lock, which
other runs cause, nor the harness's own work): once they are spent, each further request of
the candidate's worker gets a moment for an answer already on its way (a late one fails as the
candidate's ``timeout``) and no scenario starts (the rest are ``skipped``). What is left of the
caller's limit covers the harness's work, the upstreams and waits for the lock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["Budget"]


class _Built(Protocol):
    @property
    def seconds(self) -> float:
        """Seconds the build took (0 when it came from the cache)."""
        ...


@dataclass(frozen=True)
class Budget:
    """A budget of the candidate's seconds.

    Attributes:
        seconds: The budget, seconds.
        build_s: Seconds of it the candidate's build took (0 when it came from the cache).
    """

    seconds: float
    build_s: float = 0.0

    @classmethod
    def after_build(cls, seconds: float | None, built: _Built | None) -> Budget | None:
        """The run's budget once its build is done (None: the run has none)."""
        if seconds is None:
            return None
        return cls(seconds, built.seconds if built is not None else 0.0)

    def left_s(self, requests_s: float) -> float:
        """Seconds left after the candidate's worker spent ``requests_s`` in requests."""
        return self.seconds - self.build_s - requests_s

    def spent(self, requests_s: float) -> bool:
        """Whether nothing is left after ``requests_s`` of requests."""
        return self.left_s(requests_s) <= 0

    def reason(self, what: str) -> str:
        """Why ``what`` gets no more time, for a failure."""
        return f"the candidate's time budget of {self.seconds:.0f} s ran out ({what})"
