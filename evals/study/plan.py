"""A study's plan: arms x models x epochs on one task, its budget and what it will cost.

The plan is printed before anything runs, so a person sees the size of a study (runs, the
budget of each, device hours and agent tokens at most) before spending it. Device time comes
from the target's ``[cost]`` table (``evals/targets/<name>/target.toml``: seconds of device
time one harness run takes on each suite, measured where the table says), for the suites the
study runs (its agents' evaluations on the work suite, each final score on the score suite);
tokens from the task's ``token_limit``, or, without one, from its message limit times an
assumed number of tokens a message (``tokens_per_message``, printed as the assumption it is).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evals.bench.arms import ARMS
from evals.bench.config.targets import TARGETS
from evals.bench.config.task_args import TaskArgs

__all__ = ["StudyPlan", "StudyPlanError"]


class StudyPlanError(ValueError):
    """A study asked for something that does not exist or cannot run (one line)."""


@dataclass(frozen=True, kw_only=True)
class StudyPlan:
    """What a study runs.

    Attributes:
        target: The task's target (``cpu_attention``, ``fa3_hopper``, ``fa4_blackwell``).
        arms: Solver arms (names of :data:`evals.bench.arms.ARMS`), each at its defaults.
        models: Agent models (``provider/model``); a replayed kernel runs as ``mockllm/model``.
        epochs: Runs of each (arm, model), each with its own seed.
        task_args: The task's ``-T`` arguments, the same for every run.
        log_dir: The eval set's log folder: a second invocation with the same plan resumes it.
        tokens_per_message: Assumed agent tokens a message, for the token estimate when the
            task sets no ``token_limit``.
        publish: The results are for publication: the sandbox must be a container (``docker``
            or ``k8s``; ``local`` is refused before anything runs) and the results commands
            refuse any run not scored in one (``--publish``).
    """

    target: str
    arms: tuple[str, ...]
    models: tuple[str, ...]
    epochs: int
    task_args: TaskArgs
    log_dir: Path
    tokens_per_message: int = 3000
    publish: bool = False

    def __post_init__(self) -> None:
        """Validate every field against what exists (one-line :class:`StudyPlanError`)."""
        target = TARGETS.get(self.target)
        if target is None:
            raise StudyPlanError(f"unknown task {self.target!r} (known: {', '.join(TARGETS)})")
        if target.unavailable:
            raise StudyPlanError(f"task {self.target} cannot run here: {target.unavailable}")
        unknown = [a for a in self.arms if a not in ARMS]
        if unknown or not self.arms:
            raise StudyPlanError(f"unknown arm {unknown or '(none given)'}: known {list(ARMS)}")
        if len(set(self.arms)) != len(self.arms) or len(set(self.models)) != len(self.models):
            raise StudyPlanError("an arm or a model is named twice")
        if not self.models or self.epochs < 1 or self.tokens_per_message < 1:
            raise StudyPlanError("a study needs a model, epochs >= 1 and tokens_per_message >= 1")
        if self.publish and self.task_args.isolation != "container":
            raise StudyPlanError(
                f"--publish needs a container sandbox (-T sandbox=docker or k8s): with "
                f"sandbox={self.task_args.sandbox} the agent and the scorer share a user and a "
                "host, so the scores are not tamper-proof"
            )

    @property
    def runs(self) -> int:
        """Samples the study scores: arms x models x epochs (one sample a task)."""
        return len(self.arms) * len(self.models) * self.epochs

    @property
    def device(self) -> str:
        """``gpu`` or ``cpu``: what the harness measures on."""
        return TARGETS[self.target].device

    def device_hours(self) -> float | None:
        """Device hours at most: every run spends all its evaluations, then the score.

        Each evaluation costs a harness run on the work suite, the score one on the score
        suite (``-T suite`` and ``-T score_suite``).

        None when the target's folder has no ``[cost]`` table.
        """
        cost = TARGETS[self.target].folder.cost
        if cost is None:
            return None
        args = self.task_args
        per_run = args.evaluations * cost.run_s(args.suite) + cost.run_s(args.score_suite)
        return self.runs * per_run / 3600.0

    def agent_tokens(self) -> int:
        """Agent tokens at most (token limit, else messages x ``tokens_per_message``)."""
        limit = self.task_args.token_limit
        per_run = (
            limit if limit is not None else self.task_args.message_limit * (self.tokens_per_message)
        )
        return self.runs * per_run

    def lines(self) -> list[str]:
        """The plan as printed before the study starts."""
        a = self.task_args
        hours, cost = self.device_hours(), TARGETS[self.target].folder.cost
        device = (
            f"at most {hours:.1f} {self.device}-hours ({cost.basis})"
            if hours is not None and cost is not None
            else "unknown (the target has no [cost] table)"
        )
        tokens = (
            f"at most {self.agent_tokens():,} (token_limit {a.token_limit} a run)"
            if a.token_limit is not None
            else f"at most {self.agent_tokens():,} (assumed {self.tokens_per_message:,} a message "
            f"x message_limit {a.message_limit}; set -T token_limit to bound it)"
        )
        isolation = (
            f"isolation {a.isolation}"
            if a.isolation == "container"
            else f"isolation {a.isolation}: the agent and the scorer share a user and a host; "
            "scores are not tamper-proof, marked on the leaderboard, refused by --publish"
        )
        return [
            f"study: {self.target}, {len(self.arms)} arms x {len(self.models)} models x "
            f"{self.epochs} epochs = {self.runs} runs",
            f"arms: {', '.join(self.arms)}",
            f"models: {', '.join(self.models)}",
            f"budget a run: message_limit {a.message_limit}, token_limit {a.token_limit}, "
            f"time_limit {a.time_limit} s, evaluations {a.evaluations}, attempts {a.attempts}; "
            f"work suite {a.suite}, score suite {a.score_suite}, sandbox {a.sandbox}",
            f"{isolation}{' (for publication)' if self.publish else ''}",
            f"device time: {device}",
            f"agent tokens: {tokens}",
            f"logs: {self.log_dir} (run the same command again to resume)",
        ]
