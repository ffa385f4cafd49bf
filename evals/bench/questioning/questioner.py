"""The questioner: decision-point detectors plus a director, wired into the agent loop."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from inspect_ai.log import transcript
from inspect_ai.model import ChatMessageUser

from evals.bank import focus_from_scenarios
from evals.bench.config.budget import spend
from evals.bench.config.settings import TaskSettings
from evals.bench.questioning.decisions import (
    DecisionPoint,
    LimitClaimDetector,
    StallDetector,
    SuspiciousGainDetector,
    failed_claim,
)
from evals.bench.questioning.director import Director
from evals.bench.scoring.verdict_store import read_verdict


@dataclass(frozen=True, kw_only=True)
class DetectorSettings:
    """When the detectors fire (logged with each arm's settings).

    Attributes:
        stall_bench_calls: ``bench`` results without a new best before a stall fires.
        stall_turns: Turns without a new best before a stall fires.
        gain_factor: A bench geomean above this times the previous best is suspicious.
    """

    stall_bench_calls: int = 3
    stall_turns: int = 20
    gain_factor: float = 1.5


class Questioner:
    """Watches the run, and at each decision point asks its director for a question."""

    def __init__(self, director: Director, task: TaskSettings, detect: DetectorSettings) -> None:
        self.director, self.task = director, task
        self.stall = StallDetector(detect.stall_bench_calls, detect.stall_turns)
        self.limit = LimitClaimDetector()
        self.gain = SuspiciousGainDetector(detect.gain_factor)
        self.worst: list[dict[str, Any]] = []
        self.claim: str | None = None

    def summary(self) -> dict[str, Any]:
        """The compact state a questioner sees."""
        return {
            "best_speedup": self.stall.best,
            "worst_scenarios": self.worst[:3],
            "claim": self.claim,
            "focus": focus_from_scenarios(self.worst[:3]),
        }

    async def on_reply(self, text: str) -> list[ChatMessageUser]:
        """An assistant message: look for a claimed ceiling; count the turn."""
        points = [self.limit.on_text(text), self.stall.on_turn()]
        for p in points:
            if p is not None and p.trigger == "limit_claim":
                self.claim = p.evidence["claim"]
        return await self._handle(points)

    async def on_tools(self, names: set[str]) -> list[ChatMessageUser]:
        """Tools ran: after a ``bench``, read its verdict from the workspace."""
        verdict = await read_verdict("bench") if "bench" in names else None
        if verdict is None:  # no bench, or no verdict (e.g. a build error): nothing to learn
            return []
        agg = verdict.aggregates
        geomean = agg.geomean_speedup.get(self.task.upstream) if agg.all_correct else None
        speeds = [(r, r.speedups().get(self.task.upstream)) for r in verdict.results]
        self.worst = sorted(
            (
                {
                    "id": r.scenario.id,
                    "category": r.scenario.params.get("category"),
                    "speedup": speed,
                }
                for r, speed in speeds
                if speed
            ),
            key=lambda s: s["speedup"],
        )
        flags = [f for r in verdict.results for f in r.flags]
        return await self._handle(
            [self.gain.on_bench(geomean, flags), self.stall.on_bench(geomean)]
        )

    async def on_failed_claim(self, report: str) -> list[ChatMessageUser]:
        """A submission failed verification."""
        return await self._handle([failed_claim(report)])

    async def _handle(self, points: list[DecisionPoint | None]) -> list[ChatMessageUser]:
        messages = []
        for point in points:
            if point is None:
                continue
            state = self.summary()
            transcript().info(
                {"decision_point": asdict(point), "state": state}, source="kernelseek"
            )
            asked = await self.director.ask(point, state)
            if asked is None:
                transcript().info(
                    {"no_question": point.trigger, "director": self.director.name},
                    source="kernelseek",
                )
                continue
            meta: dict[str, Any] = {
                "source": asked.source,
                "trigger": point.trigger,
                "bank_id": asked.bank_id,
                "state": state,
                "note": asked.note,
            }
            event: dict[str, Any] = {"question": {**meta, "text": asked.text}}
            transcript().info(event, source="kernelseek")
            spend("questions")
            messages.append(ChatMessageUser(content=asked.text, metadata={"kernelseek": meta}))
        return messages
