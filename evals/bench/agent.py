"""The default agent: plain tools, the stop condition, no questions."""

from __future__ import annotations

from inspect_ai.log import transcript
from inspect_ai.model import ChatMessageUser, execute_tools, get_model
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import Tool, bash
from pydantic import JsonValue

from evals.bench.settings import TaskSettings
from evals.bench.stop import StopCondition
from evals.bench.tools import bench, check, submit

CONTINUE = "Continue: use your tools to improve and verify the kernel, and call submit() when done."


def agent_tools(settings: TaskSettings) -> list[Tool]:
    """bash, check, bench and submit."""
    return [bash(timeout=settings.check_timeout), check(settings), bench(settings), submit()]


@solver
def kernel_agent(*, attempts: int | None = None, max_idle_turns: int = 3) -> Solver:
    """Minimal-information agent: the task prompt, a shell, check/bench/submit.

    Args:
        attempts: Submissions allowed (default: the task's ``attempts``).
        max_idle_turns: Stop after this many consecutive replies without a tool call.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        settings = TaskSettings.from_json(state.metadata["settings"])
        resolved: dict[str, JsonValue] = {
            "attempts": attempts or settings.attempts,
            "max_idle_turns": max_idle_turns,
        }
        transcript().info(
            {"solver": "kernel_agent", "settings": settings.to_json(), "solver_settings": resolved},
            source="kernelseek",
        )
        tools = agent_tools(settings)
        state.tools = tools
        stop = StopCondition(settings, attempts or settings.attempts)
        model, idle = get_model(), 0
        while not state.completed:
            output = await model.generate(state.messages, tools)
            state.output = output
            state.messages.append(output.message)
            calls = output.message.tool_calls or []
            if not calls:
                idle += 1
                if idle >= max_idle_turns:
                    break
                state.messages.append(ChatMessageUser(content=CONTINUE))
                continue
            idle = 0
            result = await execute_tools(state.messages, tools)
            state.messages.extend(result.messages)
            if any(call.function == "submit" for call in calls):
                verdict = await stop.verify()
                if verdict.accepted or verdict.exhausted:
                    break
                state.messages.append(ChatMessageUser(content=verdict.message))
        return state

    return solve
