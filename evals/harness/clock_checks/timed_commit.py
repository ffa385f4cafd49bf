"""What an audited timing round commits to: a digest of every timed output it kept.

The round audit (:mod:`evals.harness.clock_checks.round_audit`) bounds a round that took *more* time
than its calls reported. A candidate that owns its worker could instead do *less* work in the round:
skip most timed calls, say it kept only a few outputs, and compute the ones the parent later picks
only when they are fetched (the ``timed_outputs`` request, which no clock covers). So an audited
round's answer carries a digest (:mod:`evals.harness.clock_checks.digest`) of each output it kept,
made inside the round and so inside the parent's clock on it, and the parent holds it
to three things:

- it ran as many timed calls as the request's trial bounds allow, and kept every one's
  output, up to what the keep cap allows (the trials are ``0 .. trials - 1``; an honest
  worker drops outputs only past ``KEEP_TIMED_BYTES``);
- one digest per kept output;
- each output fetched later is the one committed to (and, as before, right).

A call that skipped its work can commit only to what it had: if its output is one of those
checked, it is either wrong or not the committed one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from evals.harness.clock_checks.digest import matches
from evals.harness.failures import Code, Failure
from evals.harness.targets.guards import KEEP_TIMED_BYTES

__all__ = ["Commitment"]


@dataclass(frozen=True)
class Commitment:
    """An audited round's kept trials and their digests.

    Attributes:
        trials: Timed calls the round made, as it reported them.
        digests: The committed digest of each kept trial's output, by trial.
        seed: The digests' seed (the round's ``rng_seed``).
    """

    trials: int
    digests: dict[int, str]
    seed: int

    @classmethod
    def read(cls, request: dict[str, Any], answer: dict[str, Any]) -> Commitment | Failure:
        """The commitment of ``answer`` to ``request``, or why it is not one."""
        kept, digests, trials = answer.get("kept"), answer.get("digests"), answer.get("trials")
        if not isinstance(trials, int) or isinstance(trials, bool) or trials < 1:
            return _broken(f"it reported {trials!r} timed calls")
        high = int(request["settings"]["max_trials"])
        low = min(int(request["settings"]["min_trials"]), high)
        if not low <= trials <= high:  # every round runs min_trials, and never past max_trials
            return _broken(f"it reported {trials} timed calls, outside the {low}-{high} it runs")
        if not isinstance(kept, list) or not all(
            isinstance(t, int) and not isinstance(t, bool) for t in kept
        ):
            return _broken("its kept trials are not a list of trial numbers")
        if not kept:
            return _broken(f"it kept none of its {trials} timed outputs")
        if len(set(kept)) != len(kept) or any(not 0 <= t < trials for t in kept):
            return _broken(f"its kept trials repeat or fall outside its {trials} timed calls")
        if not isinstance(digests, list) or len(digests) != len(kept):
            return _broken(f"it committed {_count(digests)} digests for {len(kept)} kept outputs")
        return cls(trials, dict(zip(kept, digests, strict=True)), int(request["rng_seed"]))

    def covers(self, out: torch.Tensor) -> Failure | None:
        """Whether the round kept every output the keep cap allows, outputs like ``out``."""
        size = max(1, out.numel() * out.element_size())
        needed = min(self.trials, max(1, KEEP_TIMED_BYTES // size))
        if len(self.digests) >= needed:
            return None
        return _broken(
            f"it kept {len(self.digests)} of its {self.trials} timed outputs, where the keep "
            f"cap holds {needed}"
        )

    def holds(self, trial: int, out: torch.Tensor) -> Failure | None:
        """Whether the fetched output of ``trial`` is the one the round committed to."""
        if matches(out, self.digests[trial], self.seed):
            return None
        reason = (
            f"a timed call (trial {trial}) returned another output than the one its round "
            "committed to"
        )
        return Failure(Code.STALE_RESULT, reason)


def _broken(why: str) -> Failure:
    return Failure(Code.TIMING_MISMATCH, f"the timing round's commitment is broken: {why}")


def _count(digests: object) -> int | str:
    return len(digests) if isinstance(digests, list) else "no"
