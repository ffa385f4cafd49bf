"""The KERNELSEEK arms: the minimal agent plus a questioner at decision points.

Three variants differ only in who asks (the director): ``kernelseek`` a person attached over
ACP, ``kernelseek_bank`` the question bank, ``kernelseek_model`` a questioner model (its
rule-breaking questions replaced by the bank's).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import asdict, dataclass

from inspect_ai.model import Model, get_model
from inspect_ai.solver import Generate, Solver, TaskState, solver
from pydantic import JsonValue

from evals.bank import load_bank
from evals.bench.arms.common import LoopSettings, log_settings, task_settings
from evals.bench.config.keywords import keyword_settings
from evals.bench.config.seeds import sample_seed
from evals.bench.questioning.director import BankDirector, Director, ModelDirector
from evals.bench.questioning.human import HumanDirector
from evals.bench.questioning.questioner import DetectorSettings, Questioner

__all__ = [
    "HumanSettings",
    "KernelseekSettings",
    "ModelSettings",
    "kernelseek",
    "kernelseek_bank",
    "kernelseek_model",
]


@dataclass(frozen=True, kw_only=True)
class KernelseekSettings(DetectorSettings, LoopSettings):
    """Settings of every KERNELSEEK arm: the agent loop's and the detectors'."""

    @property
    def detect(self) -> DetectorSettings:
        """When the decision points fire."""
        return DetectorSettings(
            stall_bench_calls=self.stall_bench_calls,
            stall_turns=self.stall_turns,
            gain_factor=self.gain_factor,
        )


@dataclass(frozen=True, kw_only=True)
class HumanSettings(KernelseekSettings):
    """Settings of ``kernelseek``.

    Attributes:
        wait_s: Seconds to wait for the person's question at a decision point.
    """

    wait_s: float = 300.0


@dataclass(frozen=True, kw_only=True)
class ModelSettings(KernelseekSettings):
    """Settings of ``kernelseek_model``.

    Attributes:
        questioner: The questioner model (default: the agent's model).
    """

    questioner: str | Model | None = None


def _arm(
    name: str,
    arm: KernelseekSettings,
    make_director: Callable[[random.Random], Director],
    extra: dict[str, JsonValue],
) -> Solver:
    """The agent loop with a questioner whose director ``make_director`` seeds per run."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        settings = task_settings(state)
        director = make_director(random.Random(sample_seed(state)))
        resolved = {**arm.resolved(settings), **asdict(arm.detect), **extra}
        log_settings(name, settings, resolved)
        questioner = Questioner(director, settings, arm.detect)
        return await arm.run(state, settings, observers=[questioner])

    return solve


@solver
@keyword_settings(HumanSettings())
def kernelseek(arm: HumanSettings) -> Solver:
    """KERNELSEEK with a human questioner attached through ``--acp-server`` / ``inspect acp``.

    Args:
        arm: Its ``-S`` settings, :class:`HumanSettings`.
    """
    return _arm(
        "kernelseek",
        arm,
        lambda rng: HumanDirector(arm.wait_s),
        {"director": "human", "wait_s": arm.wait_s},
    )


@solver
@keyword_settings(KernelseekSettings())
def kernelseek_bank(arm: KernelseekSettings) -> Solver:
    """KERNELSEEK questioning itself from the bank at each decision point.

    Args:
        arm: Its ``-S`` settings, :class:`KernelseekSettings`.
    """
    bank = load_bank()
    return _arm("kernelseek_bank", arm, lambda rng: BankDirector(bank, rng), {"director": "bank"})


@solver
@keyword_settings(ModelSettings())
def kernelseek_model(arm: ModelSettings) -> Solver:
    """KERNELSEEK with a model asking the questions (``-S questioner=provider/model``).

    Args:
        arm: Its ``-S`` settings, :class:`ModelSettings`.
    """
    bank = load_bank()
    questioner = arm.questioner
    name = questioner if isinstance(questioner, str) else getattr(questioner, "name", None)

    def make(rng: random.Random) -> Director:
        model = questioner if isinstance(questioner, Model) else get_model(questioner)
        return ModelDirector(model, BankDirector(bank, rng))

    return _arm("kernelseek_model", arm, make, {"director": "model", "questioner": name})
