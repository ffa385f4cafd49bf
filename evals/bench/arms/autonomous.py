"""The ``autonomous`` arm: the agent loop with rich context and no questions.

Besides the plain tools it gets a ``profile`` tool (per-scenario throughput from the harness,
plus an Nsight Compute summary on GPU targets where ``ncu`` exists), a lessons store it reads
and appends to (``LESSONS.md`` in the workspace), and documentation and the reference source
in ``docs/``.
"""

from __future__ import annotations

from pathlib import Path

from inspect_ai.model import ChatMessageUser
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import sandbox
from pydantic import JsonValue

from evals.bench.agent.lessons import lessons_append, lessons_read
from evals.bench.agent.profile import profile
from evals.bench.arms.common import LoopSettings, log_settings, task_settings
from evals.bench.config.keywords import keyword_settings
from evals.bench.config.targets import bench_target
from evals.harness.targets import attention

__all__ = ["autonomous"]


@solver
@keyword_settings(LoopSettings())
def autonomous(arm: LoopSettings) -> Solver:
    """Rich context, no questions: profile and lessons tools, docs and reference source.

    Args:
        arm: Its ``-S`` settings, :class:`~evals.bench.arms.common.LoopSettings`.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        settings = task_settings(state)
        docs = _docs(settings.target)
        for name, text in docs.items():
            await sandbox().write_file(f"docs/{name}", text)
        names: list[JsonValue] = list(sorted(docs))
        log_settings(
            "autonomous", settings, {"attempts": arm.attempts_for(settings), "docs": names}
        )
        state.messages.append(_context_message())
        extra = [profile(settings), lessons_read(), lessons_append()]
        return await arm.run(state, settings, extra_tools=extra)

    return solve


def _docs(target: str) -> dict[str, str]:
    """The target's notes and the harness's reference implementation, by file name."""
    notes = sorted(bench_target(target).context().iterdir(), key=lambda d: d.name)
    docs = {d.name: d.read_text() for d in notes}
    docs["reference_attention.py"] = Path(attention.__file__).read_text()
    return docs


def _context_message() -> ChatMessageUser:
    return ChatMessageUser(
        content=(
            "Resources: `docs/` holds notes on the target and the harness's reference "
            "implementation; `profile()` shows where time goes per scenario; `lessons_read()` "
            "and `lessons_append(lesson)` keep a lessons store (LESSONS.md) across your attempts: "
            "read it first and record what you learn."
        )
    )
