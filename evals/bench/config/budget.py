"""One budget for every arm, and what each run spent of it.

The budget (task arguments, logged with the settings) is the same for every arm:

- ``agent_tokens`` (``-T token_limit``): tokens of the agent model's own generations;
- ``agent_messages`` (``-T message_limit``): messages of the agent's loop: its replies, tool
  results, "continue" prompts and verification reports (a turn is at least 2 messages);
- ``working_time_s`` (``-T time_limit``): Inspect's working-time limit of the sample;
- ``evaluations`` (``-T evaluations``): harness runs the agent asks for (``check``, ``bench``,
  ``profile``; ``open_ended`` benches each candidate). Verifying a submission and the final
  score are not counted.

Questions injected by the KERNELSEEK arms, the questioner model's tokens and a recipe's stage
prompts are counted apart (``questions``, ``questioner_tokens``, ``recipe_prompts``) and never
consume the agent's budget. The counts live in the sample's store; the scorer copies them into
each score's metadata (``budget``: ``limits`` and ``spent``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal, get_args

from inspect_ai.log import transcript
from inspect_ai.util import sample_limits, store

from evals.bench.config.settings import TaskSettings
from evals.bench.scoring.harness_exec import HarnessRun, run_harness
from evals.bench.scoring.verdict_store import remember

BUDGET_KEY = "kernelseek:budget"
MESSAGES_PER_TURN = 2  # an assistant reply and at least one tool result or prompt
Spend = Literal[
    "agent_tokens",
    "agent_messages",
    "evaluations",
    "questions",
    "questioner_tokens",
    "recipe_prompts",
]


@dataclass(frozen=True)
class Budget:
    """The limits of one run (None: unlimited).

    Attributes:
        agent_tokens: Tokens of the agent model's generations.
        agent_messages: Messages of the agent's loop.
        working_time_s: Working time of the sample, in seconds.
        evaluations: Harness runs the agent asks for.
    """

    agent_tokens: int | None
    agent_messages: int
    working_time_s: int | None
    evaluations: int

    @classmethod
    def from_settings(cls, settings: TaskSettings) -> Budget:
        """The task's budget."""
        return cls(
            agent_tokens=settings.token_limit,
            agent_messages=settings.message_limit,
            working_time_s=settings.time_limit,
            evaluations=settings.evaluations,
        )

    @property
    def turns(self) -> int:
        """Agent turns the message budget allows."""
        return self.agent_messages // MESSAGES_PER_TURN


def _state() -> dict[str, Any]:
    found: dict[str, Any] = store().get(BUDGET_KEY, {})
    return found


def start(settings: TaskSettings) -> Budget:
    """Record the run's limits in the sample's store (spent counts start at 0)."""
    budget = Budget.from_settings(settings)
    if not _state():
        spent = dict.fromkeys(get_args(Spend), 0)
        store().set(BUDGET_KEY, {"limits": asdict(budget), "spent": spent})
    return budget


def report() -> dict[str, Any] | None:
    """Limits and spent counts for the score's metadata, with the working time used so far."""
    state = _state()
    if not state:
        return None
    try:
        working = float(sample_limits().working.usage)
    except Exception:  # outside a sample (unit tests): no working time to report
        working = None
    return {"limits": state["limits"], "spent": {**state["spent"], "working_time_s": working}}


def spend(kind: Spend, amount: int = 1) -> None:
    """Add ``amount`` to what the run spent of ``kind``."""
    state = _state() or {"limits": {}, "spent": {}}
    state["spent"][kind] = state["spent"].get(kind, 0) + amount
    store().set(BUDGET_KEY, state)


def spent(kind: Spend) -> int:
    """What the run spent of ``kind`` so far."""
    value: int = _state().get("spent", {}).get(kind, 0)
    return value


def exhausted(*, evaluations: bool = False) -> str | None:
    """Why the agent's budget is used up (one line), or None while some is left.

    Args:
        evaluations: Also end on a spent evaluation budget (``open_ended``, whose steps are
            evaluations; an agent may still edit and submit without running the harness).
    """
    limits = _state().get("limits", {})
    kinds: tuple[Spend, ...] = ("agent_tokens", "agent_messages", "evaluations")
    for kind in kinds if evaluations else kinds[:2]:
        limit = limits.get(kind)
        if limit is not None and spent(kind) >= limit:
            return f"{kind} budget spent ({spent(kind)} of {limit})"
    return None


def evaluation_left() -> bool:
    """Whether the agent may run the harness once more."""
    limit = _state().get("limits", {}).get("evaluations")
    return limit is None or spent("evaluations") < limit


def note_exhausted(reason: str) -> None:
    """Record in the transcript that the run stopped on its budget."""
    transcript().info(
        {"budget_exhausted": reason, "spent": _state().get("spent")}, source="kernelseek"
    )


async def budgeted_harness(
    settings: TaskSettings,
    command: Literal["check", "bench"],
    *,
    suite: str,
    timeout: int,
) -> HarnessRun:
    """Run the harness for the agent if its evaluation budget allows, counting the run."""
    if not evaluation_left():
        limit = _state().get("limits", {}).get("evaluations")
        reason = f"evaluation budget spent ({spent('evaluations')} of {limit}): submit your kernel"
        remember(command, None)
        return HarnessRun(-1, "", None, reason)
    spend("evaluations")
    return await run_harness(settings, command, suite=suite, timeout=timeout)
