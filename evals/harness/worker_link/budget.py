"""The run's time budget: past it the candidate gets no more time, and the run still ends.

A caller with a time limit of its own (the Inspect scorer: an hour for a ``score``) gives the
harness a budget below it (``--time-budget``). Without one, a candidate whose calls are slow
but each under its request's limit made a dev run outlast the caller's limit: the run ended
without a verdict, a fault the scorer books as the harness's, so the sample was retried and
left out of every statistic: a failing agent's way out. With a budget, the candidate's worker
gets no request time past the deadline (the request fails as the candidate's ``timeout``) and
no scenario starts after it (the rest are ``skipped``); what is left of the caller's limit
covers the trace and the upstreams of the scenarios judged.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

__all__ = ["Budget"]


@dataclass(frozen=True)
class Budget:
    """A time budget counted from its start on :func:`time.monotonic`.

    Attributes:
        seconds: The budget, seconds.
        deadline: The monotonic time it runs out.
    """

    seconds: float
    deadline: float

    @classmethod
    def starting_now(cls, seconds: float) -> Budget:
        """A budget of ``seconds`` from now."""
        return cls(seconds, time.monotonic() + seconds)

    def left_s(self) -> float:
        """Seconds left (negative once spent)."""
        return self.deadline - time.monotonic()

    def spent(self) -> bool:
        """Whether the deadline has passed."""
        return self.left_s() <= 0

    def reason(self, what: str) -> str:
        """Why ``what`` gets no more time, for a failure."""
        return f"the run's time budget of {self.seconds:.0f} s ran out ({what})"
