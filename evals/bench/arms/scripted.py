"""The ``scripted`` arm: a fixed recipe of stages driven through the agent loop."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from inspect_ai.solver import Generate, Solver, TaskState, solver
from pydantic import JsonValue

from evals.bench.agent.recipe import StageController, load_recipe
from evals.bench.arms.common import LoopSettings, log_settings, task_settings
from evals.bench.config.keywords import keyword_settings
from evals.bench.config.targets import bench_target

__all__ = ["ScriptedSettings", "scripted"]


@dataclass(frozen=True, kw_only=True)
class ScriptedSettings(LoopSettings):
    """Settings of ``scripted``.

    Attributes:
        recipe: Path of a recipe file (default: the target's, ``recipes/<target>.yaml``).
    """

    recipe: str | None = None


@solver
@keyword_settings(ScriptedSettings())
def scripted(arm: ScriptedSettings) -> Solver:
    """A fixed recipe: stage prompts injected in order, each ended by its exit criterion.

    Args:
        arm: Its ``-S`` settings, :class:`ScriptedSettings`.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        settings = task_settings(state)
        path = Path(arm.recipe) if arm.recipe else bench_target(settings.target).recipe()
        plan = load_recipe(path)
        stages: list[JsonValue] = [s.name for s in plan.stages]
        resolved: dict[str, JsonValue] = {
            "recipe": str(path),
            "attempts": arm.attempts_for(settings),
            "stages": stages,
        }
        log_settings("scripted", settings, resolved)
        controller = StageController(plan, settings.message_limit, settings.upstream)
        state.messages.append(controller.start())
        return await arm.run(state, settings, observers=[controller])

    return solve
