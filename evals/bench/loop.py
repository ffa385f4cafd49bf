"""The agent loop of every agent arm: generate, run tools, verify submissions, spend the budget."""

from __future__ import annotations

from inspect_ai.model import ChatMessage, ChatMessageUser, execute_tools, get_model
from inspect_ai.solver import TaskState
from inspect_ai.tool import Tool, bash

from evals.bench import budget
from evals.bench.observer import Observer
from evals.bench.settings import TaskSettings
from evals.bench.stop import StopCondition
from evals.bench.tools import bench, check, submit

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
    what they add is not charged to the agent's budget (:mod:`evals.bench.budget`), which ends
    the loop when spent.
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
        for w in watchers:
            state.messages.extend(await w.on_reply(output.message.text))
        calls = output.message.tool_calls or []
        if not calls:
            idle += 1
            if idle >= max_idle_turns:
                break
            _agent_says(state, ChatMessageUser(content=CONTINUE))
            continue
        idle = 0
        result = await execute_tools(state.messages, tools)
        for message in result.messages:
            _agent_says(state, message)
        names = {call.function for call in calls}
        for w in watchers:
            state.messages.extend(await w.on_tools(names))
        if "submit" in names:
            verdict = await stop.verify()
            if verdict.accepted or verdict.exhausted:
                break
            _agent_says(state, ChatMessageUser(content=verdict.message))
            for w in watchers:
                state.messages.extend(await w.on_failed_claim(verdict.message))
    else:
        if reason is not None:
            budget.note_exhausted(reason)
    return state


def _agent_says(state: TaskState, message: ChatMessage) -> None:
    """Append a message of the agent's own loop, charged to its message budget."""
    state.messages.append(message)
    budget.spend("agent_messages")
