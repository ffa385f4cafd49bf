"""Directors: who asks the question at a decision point (nobody, the bank, or a model).

A question is injected as a user message whose metadata records its source, trigger, bank id
and the state it saw, so results can count questions by trigger and source.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any, Protocol

from inspect_ai.model import ChatMessage, ChatMessageSystem, ChatMessageUser, Model

from evals.bank import Bank, choose_question
from evals.bench.config.budget import spend
from evals.bench.questioning.decisions import DecisionPoint


@dataclass(frozen=True)
class Asked:
    """A question to inject: its text, who asked, and the bank id when it came from the bank."""

    text: str
    source: str
    bank_id: str | None = None
    note: str | None = None


class Director(Protocol):
    """Decides what happens at a decision point."""

    name: str

    async def ask(self, point: DecisionPoint, summary: dict[str, Any]) -> Asked | None:
        """The question for ``point`` given the compact state ``summary``, or None."""
        ...


class BankDirector:
    """Questions from the bank: for the trigger, relevant to the state, never repeated."""

    name = "bank"

    def __init__(self, bank: Bank, rng: random.Random) -> None:
        self.bank, self.rng = bank, rng
        self.asked: set[str] = set()

    async def ask(self, point: DecisionPoint, summary: dict[str, Any]) -> Asked | None:
        """Pick the most relevant unasked question for the trigger."""
        question = choose_question(
            self.bank, trigger=point.trigger, focus=summary["focus"], asked=self.asked, rng=self.rng
        )
        if question is None:
            return None
        self.asked.add(question.id)
        return Asked(question.text, "bank", question.id)


QUESTIONER_PROMPT = """You direct a coding agent that is writing a fast attention kernel. It has
reached a decision point ({trigger}). Ask it exactly ONE question that names a hypothesis about
what limits or misleads it, without giving the answer or a fix, and that asks for a measurement
it can make. No code. Reply with the question only, ending with a question mark."""

_CODE = re.compile(r"`|;\s*$|[{}]|__global__|#include|\bfor\s*\(", re.MULTILINE)
_FIX = re.compile(
    r"\b(you should|just use|change (it|the \w+) to|replace \w+ with|the fix is"
    r"|instead,? use)\b",
    re.IGNORECASE,
)


def question_rule_broken(text: str) -> str | None:
    """Why a proposed question breaks the questioner's rules, or None when it is acceptable."""
    if "?" not in text:
        return "no question mark"
    if _CODE.search(text):
        return "contains code"
    if _FIX.search(text):
        return "states a fix"
    return None


class ModelDirector:
    """A questioner model asks; a rule-breaking question is replaced by the bank's."""

    name = "model"

    def __init__(self, model: Model, fallback: BankDirector) -> None:
        self.model, self.fallback = model, fallback

    async def ask(self, point: DecisionPoint, summary: dict[str, Any]) -> Asked | None:
        """Ask the questioner model; fall back to the bank if its question breaks a rule."""
        messages: list[ChatMessage] = [
            ChatMessageSystem(content=QUESTIONER_PROMPT.format(trigger=point.trigger)),
            ChatMessageUser(
                content=f"Trigger: {point.trigger}\nEvidence: {point.evidence}\nState: {summary}"
            ),
        ]
        output = await self.model.generate(messages)
        spend("questioner_tokens", output.usage.total_tokens if output.usage else 0)
        text = output.completion.strip()
        broken = question_rule_broken(text)
        if broken is None:
            return Asked(text, "model")
        replacement = await self.fallback.ask(point, summary)
        if replacement is None:
            return None
        note = f"questioner's question rejected ({broken}): {text[:200]}"
        return Asked(replacement.text, "bank", replacement.bank_id, note)
