"""A recipe: stages in order (a target folder's ``recipe.yaml``) and the controller running them."""

from __future__ import annotations

import importlib
import itertools
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Literal

from inspect_ai.log import transcript
from inspect_ai.model import ChatMessageUser
from pydantic import BaseModel, ConfigDict, Field

from evals.bench.config.budget import spend, spent
from evals.bench.scoring.verdict_store import read_verdict

__all__ = ["MIN_STAGE_MESSAGES", "Recipe", "Stage", "StageController", "load_recipe", "stage_ends"]

MIN_STAGE_MESSAGES = 4  # two turns


class Stage(BaseModel):
    """One stage: its prompt, what ends it, and its share of the message budget."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    prompt: str
    exit: Literal["new_best", "check_passes", "budget"]
    budget_share: float = Field(gt=0, le=1)


class Recipe(BaseModel):
    """Stages in order, for one target."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    target: str
    stages: list[Stage] = Field(min_length=1)


def load_recipe(path: Path | Traversable) -> Recipe:
    """Read and validate a recipe file."""
    yaml: Any = importlib.import_module("yaml")
    return Recipe.model_validate(yaml.safe_load(path.read_text()))


def stage_ends(recipe: Recipe, messages: int) -> list[int]:
    """Where each stage ends, in agent messages spent since the run began (cumulative).

    Shares are of the agent's message budget and counted in messages, the unit the budget is
    spent in (counting turns against a share of messages promised twice the budget: a turn is
    at least 2 messages, and the last stages were unreachable). Boundaries are absolute, so a
    turn that overshoots one does not push the later ones back; each stage gets at least
    :data:`MIN_STAGE_MESSAGES` where the budget allows, earlier stages giving way, so the last
    stage always starts before the budget is spent.
    """
    sizes = [max(MIN_STAGE_MESSAGES, int(s.budget_share * messages)) for s in recipe.stages]
    for i in range(len(sizes) - 2, -1, -1):
        over = sum(sizes) - messages
        if over <= 0:
            break
        sizes[i] = max(1, sizes[i] - over)
    return list(itertools.accumulate(sizes))


class StageController:
    """Advances through the recipe's stages as their exit criteria are met."""

    def __init__(self, recipe: Recipe, messages: int, upstream: str) -> None:
        self.recipe, self.upstream = recipe, upstream
        self.ends = stage_ends(recipe, messages)
        self.index, self.best = 0, 0.0

    def start(self) -> ChatMessageUser:
        """The first stage's prompt."""
        return self._enter(0, "start")

    def _enter(self, index: int, reason: str) -> ChatMessageUser:
        self.index = index
        stage = self.recipe.stages[index]
        info: dict[str, Any] = {
            "stage": stage.name,
            "index": index,
            "of": len(self.recipe.stages),
            "reason": reason,
            "ends_at_agent_message": self.ends[index],
        }
        transcript().info({"recipe_stage": info}, source="kernelseek")
        spend("recipe_prompts")
        return ChatMessageUser(
            content=stage.prompt, metadata={"kernelseek": {"source": "recipe", **info}}
        )

    def _advance(self, reason: str) -> list[ChatMessageUser]:
        if self.index + 1 >= len(self.recipe.stages):
            return []
        return [self._enter(self.index + 1, reason)]

    async def on_reply(self, text: str) -> list[ChatMessageUser]:
        """A stage whose share of the agent's messages is spent ends."""
        used = spent("agent_messages")
        return self._advance("budget") if used >= self.ends[self.index] else []

    async def on_tools(self, names: set[str]) -> list[ChatMessageUser]:
        """End the stage when its criterion is met by this turn's check or bench."""
        stage = self.recipe.stages[self.index]
        if stage.exit == "check_passes" and "check" in names:
            verdict = await read_verdict("check")
            if verdict is not None and verdict.status == "ok":
                return self._advance("check_passes")
        if "bench" in names:
            verdict = await read_verdict("bench")
            agg = verdict.aggregates if verdict is not None else None
            geo = None
            if agg is not None and agg.all_correct:
                geo = agg.geomean_speedup.get(self.upstream)
            if geo is not None and geo > self.best:
                self.best = geo
                if stage.exit == "new_best":
                    return self._advance("new_best")
        return []

    async def on_failed_claim(self, report: str) -> list[ChatMessageUser]:
        """Failed submissions do not change the stage."""
        return []
