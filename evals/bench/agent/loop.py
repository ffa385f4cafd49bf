"""The agent loop of every agent arm: generate, run tools, verify submissions, spend the budget."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from inspect_ai.log import transcript
from inspect_ai.model import ChatMessage, ChatMessageUser, execute_tools, get_model
from inspect_ai.solver import TaskState
from inspect_ai.tool import Tool, bash

from evals.bench.agent.stop import StopCondition
from evals.bench.agent.tools import bench, check, submit
from evals.bench.config import budget
from evals.bench.config.settings import TaskSettings
from evals.bench.questioning.observer import Observer

__all__ = ["CONTINUE", "agent_tools", "run_agent"]

CONTINUE = "Continue: use your tools to improve and verify the kernel, and call submit() when done."


def agent_tools(settings: TaskSettings) -> list[Tool]:
    """bash, check, bench and submit."""
    return [bash(timeout=settings.check_timeout), check(settings), bench(settings), submit()]


async def run_agent(
    state: TaskState,
    settings: TaskSettings,
    *,
    attempts: int,
    max_idle_turns: int,
    observers: list[Observer] | None = None,
    extra_tools: list[Tool] | None = None,
) -> TaskState:
    """Generate, run tools, verify submissions; observers may add user messages at each step.

    Observers are a questioner (KERNELSEEK arms) or a recipe's stage controller (scripted);
    what they add is not charged to the agent's budget (:mod:`evals.bench.config.budget`),
    which ends the loop when spent.
    """
    watchers = observers or []
    tools = agent_tools(settings) + (extra_tools or [])
    state.tools = tools
    stop = StopCondition(settings, attempts)
    model, idle = get_model(), 0
    budget.start(settings)
    reason: str | None = None
    while not state.completed and (reason := budget.exhausted()) is None:
        output = await model.generate(state.messages, tools)
        budget.spend("agent_tokens", output.usage.total_tokens if output.usage else 0)
        state.output = output
        _agent_says(state, output.message)
        asked = await _observe(state, [w.on_reply(output.message.text) for w in watchers])
        calls = output.message.tool_calls or []
        if not calls:
            idle += 1
            if asked and idle <= max_idle_turns:  # a question came: one turn to act on it
                continue
            if idle >= max_idle_turns:
                break
            _agent_says(state, ChatMessageUser(content=CONTINUE))
            continue
        idle = 0
        result = await execute_tools(state.messages, tools)
        for message in result.messages:
            _agent_says(state, message)
        names = {call.function for call in calls}
        await _observe(state, [w.on_tools(names) for w in watchers])
        if "submit" in names:
            verdict = await stop.verify()
            if verdict.accepted:
                break
            if verdict.exhausted:
                _last_claim_failed(bool(watchers))
                break
            _agent_says(state, ChatMessageUser(content=verdict.message))
            await _observe(state, [w.on_failed_claim(verdict.message) for w in watchers])
    else:
        if reason is not None:
            budget.note_exhausted(reason)
    return state


async def _observe(
    state: TaskState, pending: list[Coroutine[Any, Any, list[ChatMessageUser]]]
) -> bool:
    """Add what the observers say (in order) to the conversation; whether any said anything."""
    added = False
    for said in pending:
        messages = await said
        state.messages.extend(messages)
        added = added or bool(messages)
    return added


def _last_claim_failed(watched: bool) -> None:
    """The last submission failed: the run ends, so no question is asked (logged as such).

    Every submission is verified while attempts remain and a failed one brings the agent its
    question; after the last one the agent can no longer submit, so a question could not be
    acted on and the kernel in the workspace is scored as it is.
    """
    if watched:
        why = "the last submission failed verification: the run ends, so no question is asked"
        transcript().info(
            {"decision_point_skipped": "failed_claim", "why": why}, source="kernelseek"
        )


def _agent_says(state: TaskState, message: ChatMessage) -> None:
    """Append a message of the agent's own loop, charged to its message budget."""
    state.messages.append(message)
    budget.spend("agent_messages")
