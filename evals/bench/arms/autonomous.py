"""The autonomous arm: the agent loop with rich context and no questions.

Besides the plain tools it gets a ``profile`` tool (per-scenario throughput from the harness,
plus an Nsight Compute summary on GPU targets where ``ncu`` exists), a lessons store it reads
and appends to (``LESSONS.md`` in the workspace), and documentation and the reference source
in ``docs/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai.model import ChatMessageUser
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import Tool, tool
from inspect_ai.util import sandbox
from pydantic import JsonValue

from evals.bench.agent import log_settings, run_agent
from evals.bench.budget import budgeted_harness
from evals.bench.settings import TaskSettings
from evals.harness import attention
from evals.harness.ncu import ncu_command

CONTEXT = Path(__file__).resolve().parent / "context"
LESSONS = "LESSONS.md"


def breakdown(verdict: dict[str, Any], upstream: str) -> str:
    """Per scenario: time, share of the suite's time, TFLOP/s, GB/s, speedup; slowest first."""
    rows = []
    for s in verdict.get("scenarios", []):
        cand = s.get("times_us", {}).get("candidate")
        if cand:
            speed = (s.get("speedup") or {}).get(upstream)
            rows.append(
                (cand["median_us"], s["id"], s.get("tflops") or 0.0, s.get("gbps") or 0.0, speed)
            )
    total = sum(r[0] for r in rows) or 1.0
    lines = ["scenario  time_us  share  TFLOP/s  GB/s  speedup"]
    for us, sid, tf, gb, sp in sorted(rows, reverse=True):
        lines.append(
            f"{sid}  {us:.1f}  {us / total:.1%}  {tf:.3f}  {gb:.1f}  {sp:.3f}x"
            if sp
            else f"{sid}  {us:.1f}  {us / total:.1%}"
        )
    return "\n".join(lines)


@tool
def profile(settings: TaskSettings) -> Tool:
    """Where the time goes: per-scenario throughput (and ncu on GPUs)."""

    async def execute() -> str:
        """Profile your kernel on the dev suite.

        Returns:
            Per scenario (slowest first): time, share of the total, TFLOP/s, GB/s and speedup;
            on GPU targets also an Nsight Compute SpeedOfLight summary of the slowest scenario.
        """
        run = await budgeted_harness(
            settings, "bench", suite=settings.suite, timeout=settings.check_timeout
        )
        if run.verdict is None:
            return f"profile failed: {run.error}\n{run.table[-2000:]}"
        text = breakdown(run.verdict, settings.upstream)
        if settings.target != "cpu_attention":
            text += "\n\n" + await _ncu(settings, run.verdict)
        return text

    return execute


async def _ncu(settings: TaskSettings, verdict: dict[str, Any]) -> str:
    scen = [s for s in verdict.get("scenarios", []) if s.get("times_us")]
    if not scen:
        return "ncu: no timed scenario"
    slowest = max(scen, key=lambda s: s["times_us"]["candidate"]["median_us"])
    cmd = ncu_command(
        settings.harness_command(),
        target=settings.target,
        kernel=settings.kernel_file,
        suite=settings.suite,
        scenario=slowest["id"],
    )
    try:
        result = await sandbox().exec(cmd, timeout=settings.check_timeout)
    except Exception as exc:
        return f"ncu unavailable: {type(exc).__name__}: {exc}"
    return f"ncu ({slowest['id']}):\n{(result.stdout or result.stderr)[-4000:]}"


@tool
def lessons_read() -> Tool:
    """Read the lessons store."""

    async def execute() -> str:
        """Read the lessons recorded so far (what worked, what did not, and why).

        Returns:
            The contents of LESSONS.md, or a note that it is empty.
        """
        try:
            text = await sandbox().read_file(LESSONS)
        except FileNotFoundError:
            return "(no lessons yet)"
        return text or "(no lessons yet)"

    return execute


@tool
def lessons_append() -> Tool:
    """Append to the lessons store."""

    async def execute(lesson: str) -> str:
        """Record a lesson for later: what you tried, what happened, and why.

        Args:
            lesson: One or two sentences.

        Returns:
            A confirmation.
        """
        try:
            text = await sandbox().read_file(LESSONS)
        except FileNotFoundError:
            text = "# Lessons\n"
        await sandbox().write_file(LESSONS, f"{text.rstrip()}\n- {lesson.strip()}\n")
        return "recorded"

    return execute


@solver
def autonomous(*, attempts: int | None = None, max_idle_turns: int = 3) -> Solver:
    """Rich context, no questions: profile and lessons tools, docs and reference source.

    Args:
        attempts: Submissions allowed (default: the task's ``attempts``).
        max_idle_turns: Stop after this many consecutive replies without a tool call.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        settings = TaskSettings.from_json(state.metadata["settings"])
        n = attempts or settings.attempts
        docs = {d.name: d.read_text() for d in sorted((CONTEXT / settings.target).iterdir())}
        docs["reference_attention.py"] = Path(attention.__file__).read_text()
        for name, text in docs.items():
            await sandbox().write_file(f"docs/{name}", text)
        names: list[JsonValue] = list(sorted(docs))
        log_settings("autonomous", settings, {"attempts": n, "docs": names})
        state.messages.append(_context_message())
        extra = [profile(settings), lessons_read(), lessons_append()]
        return await run_agent(
            state, settings, attempts=n, max_idle_turns=max_idle_turns, extra_tools=extra
        )

    return solve


def _context_message() -> ChatMessageUser:
    return ChatMessageUser(
        content=(
            "Resources: `docs/` holds notes on the target and the harness's reference "
            "implementation; `profile()` shows where time goes per scenario; `lessons_read()` "
            "and `lessons_append(lesson)` keep a lessons store (LESSONS.md) across your attempts: "
            "read it first and record what you learn."
        )
    )
