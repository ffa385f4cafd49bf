"""Decision-point detectors: stall, hardware-limit claim, suspicious gain, failed claim.

Each detector is fed what the agent loop sees and returns a :class:`DecisionPoint` with its
evidence when it fires; the loop logs it as a transcript event and asks the director.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.resources.abc import Traversable
from typing import Any, Literal

from evals.data import resource

Trigger = Literal["stall", "limit_claim", "suspicious_gain", "failed_claim"]
PHRASES_FILE = resource("bank", "limit_phrases.txt")


@dataclass(frozen=True)
class DecisionPoint:
    """A moment where a question may help: what fired and the evidence it saw."""

    trigger: Trigger
    evidence: dict[str, Any]


@dataclass
class StallDetector:
    """Fires when the best verified geomean has not improved for a while.

    Args:
        bench_calls: Fire after this many ``bench`` results without a new best.
        turns: Fire after this many turns without a new best (counted from the first bench).
    """

    bench_calls: int = 3
    turns: int = 20
    best: float = 0.0
    since_best_calls: int = 0
    since_best_turns: int = 0
    seen_bench: bool = False

    def on_bench(self, geomean: float | None) -> DecisionPoint | None:
        """Record one bench result (None when not all scenarios were correct)."""
        self.seen_bench = True
        if geomean is not None and geomean > self.best:
            self.best, self.since_best_calls, self.since_best_turns = geomean, 0, 0
            return None
        self.since_best_calls += 1
        if self.since_best_calls >= self.bench_calls:
            return self._fire("bench_calls")
        return None

    def on_turn(self) -> DecisionPoint | None:
        """Record one model turn."""
        if not self.seen_bench:
            return None
        self.since_best_turns += 1
        return self._fire("turns") if self.since_best_turns >= self.turns else None

    def _fire(self, reason: str) -> DecisionPoint:
        evidence = {
            "best_geomean": self.best,
            "bench_calls_since_best": self.since_best_calls,
            "turns_since_best": self.since_best_turns,
            "reason": reason,
        }
        self.since_best_calls = self.since_best_turns = 0
        return DecisionPoint("stall", evidence)


def load_phrases(path: Traversable = PHRASES_FILE) -> tuple[str, ...]:
    """The ceiling phrases (lower case), one per line; ``#`` starts a comment."""
    lines = (ln.strip().lower() for ln in path.read_text().splitlines())
    return tuple(ln for ln in lines if ln and not ln.startswith("#"))


@dataclass
class LimitClaimDetector:
    """Fires when the agent's text claims a ceiling (phrase list kept as data)."""

    phrases: Sequence[str] = field(default_factory=load_phrases)

    def on_text(self, text: str) -> DecisionPoint | None:
        """Check one assistant message."""
        low = text.lower()
        hits = [p for p in self.phrases if p in low]
        if not hits:
            return None
        at = low.index(hits[0])
        claim = text[max(0, at - 160) : at + 160].strip()
        return DecisionPoint("limit_claim", {"phrases": hits, "claim": claim})


@dataclass
class SuspiciousGainDetector:
    """Fires on a jump of the bench geomean over the previous best, or a flagged gain.

    The harness's flags (``suspicious: 1.6x over sdpa``) compare the candidate with the
    upstream timed beside it, so a busy machine that slows the upstream raises them for any
    kernel. They count only on a gain, a new best over an earlier one: the agent's own change
    must be what looks too good. The first bench (the start kernel) sets the best.
    """

    factor: float = 1.5
    best: float = 0.0

    def on_bench(self, geomean: float | None, flags: Sequence[str]) -> DecisionPoint | None:
        """Check one bench result (its geomean speedup) and its per-scenario flags."""
        previous = self.best
        gain = geomean is not None and previous > 0 and geomean > previous
        jump = gain and geomean is not None and geomean > self.factor * previous
        flagged = [f for f in flags if "suspicious" in f or "implausible" in f] if gain else []
        if geomean is not None:
            self.best = max(self.best, geomean)
        if not (jump or flagged):
            return None
        return DecisionPoint(
            "suspicious_gain",
            {"previous_best": previous, "geomean": geomean, "harness_flags": flagged[:5]},
        )


_REPORT_LINE = re.compile(r"^(summary:|FAILED \[|ERROR \[|\s+\S.*: \[\w+\] )")
"""Lines of a harness report that say what failed: the summary and each grouped failure."""


def failed_claim(report: str, *, max_lines: int = 12) -> DecisionPoint:
    """The decision point of a submission that failed verification.

    Its evidence is the report's summary and failure lines, whole (a reader sees why it
    failed, not the table), or its last ``max_lines`` lines when it has none of them.
    """
    lines = [ln.rstrip() for ln in report.splitlines() if ln.strip()]
    said = [ln for ln in lines if _REPORT_LINE.match(ln)] or lines[-max_lines:]
    return DecisionPoint("failed_claim", {"failures": "\n".join(said[:max_lines])})
