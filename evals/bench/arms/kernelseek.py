"""KERNELSEEK arms: the minimal agent plus a questioner at decision points.

``kernelseek_bank`` asks questions from ``bank/``; ``kernelseek_model`` lets a questioner model
ask (rule-breaking questions are replaced by the bank's).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import asdict

from inspect_ai.model import Model, get_model
from inspect_ai.solver import Generate, Solver, TaskState, solver
from pydantic import JsonValue

from evals.bank import load_bank
from evals.bench.agent import log_settings, run_agent, sample_seed
from evals.bench.director import BankDirector, Director, ModelDirector
from evals.bench.human import HumanDirector
from evals.bench.questioner import DetectorSettings, Questioner
from evals.bench.settings import TaskSettings


def _arm(
    name: str,
    make_director: Callable[[random.Random], Director],
    attempts: int | None,
    max_idle_turns: int,
    detect: DetectorSettings,
    extra: dict[str, JsonValue],
) -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        settings = TaskSettings.from_json(state.metadata["settings"])
        n = attempts or settings.attempts
        rng = random.Random(sample_seed(state))
        director = make_director(rng)
        resolved: dict[str, JsonValue] = {
            "attempts": n,
            "max_idle_turns": max_idle_turns,
            **asdict(detect),
            **extra,
        }
        log_settings(name, settings, resolved)
        questioner = Questioner(director, settings, detect)
        return await run_agent(
            state, settings, attempts=n, max_idle_turns=max_idle_turns, observers=[questioner]
        )

    return solve


@solver
def kernelseek(
    *,
    wait_s: float = 300.0,
    attempts: int | None = None,
    max_idle_turns: int = 3,
    stall_bench_calls: int = 3,
    stall_turns: int = 20,
    gain_factor: float = 1.5,
) -> Solver:
    """KERNELSEEK with a human questioner attached through ``--acp-server`` / ``inspect acp``.

    Args:
        wait_s: Seconds to wait for the person's question at a decision point.
        attempts: Submissions allowed (default: the task's ``attempts``).
        max_idle_turns: Stop after this many consecutive replies without a tool call.
        stall_bench_calls: Bench results without a new best before a stall fires.
        stall_turns: Turns without a new best before a stall fires.
        gain_factor: A geomean jump above this factor is a suspicious gain.
    """
    detect = DetectorSettings(stall_bench_calls, stall_turns, gain_factor)
    return _arm(
        "kernelseek",
        lambda rng: HumanDirector(wait_s),
        attempts,
        max_idle_turns,
        detect,
        {"director": "human", "wait_s": wait_s},
    )


@solver
def kernelseek_bank(
    *,
    attempts: int | None = None,
    max_idle_turns: int = 3,
    stall_bench_calls: int = 3,
    stall_turns: int = 20,
    gain_factor: float = 1.5,
) -> Solver:
    """KERNELSEEK questioning itself from the bank at each decision point.

    Args:
        attempts: Submissions allowed (default: the task's ``attempts``).
        max_idle_turns: Stop after this many consecutive replies without a tool call.
        stall_bench_calls: Bench results without a new best before a stall fires.
        stall_turns: Turns without a new best before a stall fires.
        gain_factor: A geomean jump above this factor is a suspicious gain.
    """
    bank = load_bank()
    detect = DetectorSettings(stall_bench_calls, stall_turns, gain_factor)
    return _arm(
        "kernelseek_bank",
        lambda rng: BankDirector(bank, rng),
        attempts,
        max_idle_turns,
        detect,
        {"director": "bank"},
    )


@solver
def kernelseek_model(
    *,
    questioner: str | Model | None = None,
    attempts: int | None = None,
    max_idle_turns: int = 3,
    stall_bench_calls: int = 3,
    stall_turns: int = 20,
    gain_factor: float = 1.5,
) -> Solver:
    """KERNELSEEK with a model asking the questions (``-S questioner=provider/model``).

    Args:
        questioner: The questioner model (default: the agent's model).
        attempts: Submissions allowed (default: the task's ``attempts``).
        max_idle_turns: Stop after this many consecutive replies without a tool call.
        stall_bench_calls: Bench results without a new best before a stall fires.
        stall_turns: Turns without a new best before a stall fires.
        gain_factor: A geomean jump above this factor is a suspicious gain.
    """
    bank = load_bank()
    detect = DetectorSettings(stall_bench_calls, stall_turns, gain_factor)
    name = questioner if isinstance(questioner, str) else getattr(questioner, "name", None)

    def make(rng: random.Random) -> Director:
        model = get_model(questioner) if not isinstance(questioner, Model) else questioner
        return ModelDirector(model, BankDirector(bank, rng))

    return _arm(
        "kernelseek_model",
        make,
        attempts,
        max_idle_turns,
        detect,
        {"director": "model", "questioner": name},
    )
