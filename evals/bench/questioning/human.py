"""The human director: at a decision point, ask the attached person for a question.

A person joins a running eval started with ``--acp-server`` through ``inspect acp``; the
solver asks them through Inspect's ``request_input`` (routed over ACP), showing the trigger
and a compact state, and waits up to ``wait_s`` seconds. With no ACP server, no attached
person, a decline or a timeout, it records that and the run continues without a question.
"""

from __future__ import annotations

import importlib
from typing import Any

import anyio
from inspect_ai.log import transcript
from inspect_ai.util import request_input

from evals.bench.questioning.acp import InspectApiChanged, acp_server_running
from evals.bench.questioning.decisions import DecisionPoint
from evals.bench.questioning.director import Asked


def _schema() -> Any:
    schema: Any = importlib.import_module("acp.schema")
    question = schema.ElicitationStringPropertySchema(
        type="string", title="Question", description="One question for the agent."
    )
    return schema.ElicitationSchema(
        type="object", properties={"question": question}, required=["question"]
    )


def prompt_for(point: DecisionPoint, summary: dict[str, Any]) -> str:
    """What the person sees, as plain text: the trigger, the evidence and the compact state."""
    worst = ", ".join(f"{w['id']} {w['speedup']:.2f}x" for w in summary.get("worst_scenarios", []))
    return "\n".join(
        [
            f"KernelSeek decision point: {point.trigger}.",
            "Evidence:",
            *evidence_lines(point.evidence),
            f"Best verified speedup: {summary.get('best_speedup', 0.0):.3f}x; "
            f"worst: {worst or '-'}",
            f"Claim seen: {summary.get('claim') or '-'}",
            "Ask the agent one question.",
        ]
    )


def evidence_lines(evidence: dict[str, Any]) -> list[str]:
    """One indented line per item (a multi-line text indented below its name), never a dict."""
    lines = []
    for key, value in evidence.items():
        name = key.replace("_", " ")
        if isinstance(value, str) and "\n" in value:
            lines += [f"  {name}:", *(f"    {ln}" for ln in value.splitlines())]
        elif isinstance(value, float):
            lines.append(f"  {name}: {value:.3f}")
        elif isinstance(value, list | tuple):
            lines.append(f"  {name}: {'; '.join(map(str, value)) or '-'}")
        else:
            lines.append(f"  {name}: {value if value not in (None, '') else '-'}")
    return lines


class HumanDirector:
    """Questions typed by an attached person; none when nobody answers in time."""

    name = "human"

    def __init__(self, wait_s: float) -> None:
        self.wait_s = wait_s

    async def ask(self, point: DecisionPoint, summary: dict[str, Any]) -> Asked | None:
        """Ask the person; return their question, or None (logged) and carry on."""
        try:
            running = acp_server_running()
        except InspectApiChanged as exc:
            return self._none(f"cannot tell whether a person can attach: {exc}")
        if not running:
            return self._none("no person can attach: the eval runs without --acp-server")
        try:
            with anyio.fail_after(self.wait_s):
                result = await request_input(message=prompt_for(point, summary), schema=_schema())
        except TimeoutError:
            return self._none(f"no answer from a person within {self.wait_s:.0f} s")
        except Exception as exc:  # a broken channel must not stop the run
            return self._none(f"asking the person failed: {type(exc).__name__}: {exc}")
        text = str((result.content or {}).get("question", "")).strip()
        if result.outcome != "accepted" or not text:
            return self._none(f"the person gave no question ({result.outcome})")
        return Asked(text, "human")

    def _none(self, why: str) -> Asked | None:
        """Record why no question came, and let the run continue."""
        transcript().info({"human_questioner": why + "; continuing"}, source="kernelseek")
        return None
