"""What every arm shares: the settings of the agent loop, and how a solver begins.

:class:`LoopSettings` declares the ``-S`` settings of every arm that runs the agent loop
(:func:`evals.bench.agent.loop.run_agent`); an arm with more settings subclasses it, and
:func:`evals.bench.config.keywords.keyword_settings` turns the class into the factory's keyword
arguments, so no factory repeats them.
"""

from __future__ import annotations

from dataclasses import dataclass

from inspect_ai.log import transcript
from inspect_ai.solver import TaskState
from inspect_ai.tool import Tool
from pydantic import JsonValue

from evals.bench.agent.loop import run_agent
from evals.bench.config.settings import TaskSettings
from evals.bench.questioning.observer import Observer

__all__ = ["LoopSettings", "log_settings", "task_settings"]


@dataclass(frozen=True, kw_only=True)
class LoopSettings:
    """Settings of an arm that runs the agent loop (``-S NAME=VALUE``).

    Attributes:
        attempts: Submissions allowed (None: the task's ``attempts``).
        max_idle_turns: Stop after this many consecutive replies without a tool call.
    """

    attempts: int | None = None
    max_idle_turns: int = 3

    def attempts_for(self, task: TaskSettings) -> int:
        """Submissions allowed in a run of ``task``."""
        return self.attempts or task.attempts

    def resolved(self, task: TaskSettings) -> dict[str, JsonValue]:
        """The settings a run of ``task`` uses, as the arm logs them."""
        return {"attempts": self.attempts_for(task), "max_idle_turns": self.max_idle_turns}

    async def run(
        self,
        state: TaskState,
        task: TaskSettings,
        *,
        observers: list[Observer] | None = None,
        extra_tools: list[Tool] | None = None,
    ) -> TaskState:
        """Run the agent loop with these settings."""
        return await run_agent(
            state,
            task,
            attempts=self.attempts_for(task),
            max_idle_turns=self.max_idle_turns,
            observers=observers,
            extra_tools=extra_tools,
        )


def log_settings(solver_name: str, settings: TaskSettings, resolved: dict[str, JsonValue]) -> None:
    """Record the task's and the solver's resolved settings in the transcript."""
    transcript().info(
        {"solver": solver_name, "settings": settings.to_json(), "solver_settings": resolved},
        source="kernelseek",
    )


def task_settings(state: TaskState) -> TaskSettings:
    """The task's settings, as the task stored them in the sample's metadata."""
    return TaskSettings.from_json(state.metadata["settings"])
