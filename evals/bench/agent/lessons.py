"""A lessons store the agent reads and appends to (``LESSONS.md`` in its workspace)."""

from __future__ import annotations

from inspect_ai.tool import Tool, tool
from inspect_ai.util import sandbox

__all__ = ["LESSONS", "lessons_append", "lessons_read"]

LESSONS = "LESSONS.md"


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
