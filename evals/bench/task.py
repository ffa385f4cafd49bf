"""Building a KernelSeek task for a target: validated settings, workspace, prompt, scorer."""

from __future__ import annotations

from pathlib import Path

from inspect_ai import Task
from inspect_ai.dataset import Sample
from inspect_ai.solver import Solver

from evals.bench.agent import kernel_agent
from evals.bench.prompt import build_prompt
from evals.bench.scorer import kernel_speedup
from evals.bench.settings import TARGET_FILES, TaskSettings
from evals.harness import HarnessInputError, get_target

DEFAULT_ROOT = Path(__file__).resolve().parents[2]
START_FILES = {"cpu_attention": "start.cpp", "fa3_hopper": "start.cu"}
SANDBOX_DIRS = {"cpu_attention": "cpu", "fa3_hopper": "hopper"}


class TaskArgumentError(ValueError):
    """A task argument is invalid; the message is one line saying which and why."""


def validate(settings: TaskSettings) -> None:
    """Check every setting against the target; raise :class:`TaskArgumentError` if wrong."""
    if settings.target not in TARGET_FILES:
        raise TaskArgumentError(f"unknown target {settings.target!r}")
    try:
        target = get_target(settings.target)
    except HarnessInputError as exc:
        raise TaskArgumentError(exc.failure.reason) from None
    for name in ("suite", "score_suite"):
        value = getattr(settings, name)
        if value not in target.suite_names:
            known = ", ".join(target.suite_names)
            raise TaskArgumentError(f"{name}={value!r} is not a suite of {target.name} ({known})")
    upstreams = [u.name for u in target.upstreams] + ["fastest"]
    if settings.upstream not in upstreams:
        raise TaskArgumentError(f"upstream={settings.upstream!r}: choose one of {upstreams}")
    if settings.sandbox not in ("local", "docker", "k8s"):
        raise TaskArgumentError(f"sandbox={settings.sandbox!r}: choose local, docker or k8s")
    for name in (
        "attempts",
        "message_limit",
        "token_limit",
        "time_limit",
        "evaluations",
        "check_timeout",
        "score_timeout",
    ):
        value = getattr(settings, name)
        if value is not None and (not isinstance(value, int) or value < 1):
            raise TaskArgumentError(f"{name} must be a positive integer, got {value!r}")
    if not isinstance(settings.seed_offset, int) or settings.seed_offset < 0:
        raise TaskArgumentError(f"seed_offset must be >= 0, got {settings.seed_offset!r}")


def sandbox_spec(settings: TaskSettings, root: Path) -> str | tuple[str, str]:
    """Inspect's sandbox argument for the settings' sandbox kind."""
    folder = SANDBOX_DIRS[settings.target]
    if settings.sandbox == "docker":
        return ("docker", str(root / "sandboxes" / folder / "compose.yaml"))
    if settings.sandbox == "k8s":
        return ("k8s", str(root / "sandboxes" / "k8s" / f"values-{folder}.yaml"))
    return "local"


def kernel_task(
    settings: TaskSettings, *, version: int, solver: Solver | None = None, root: Path = DEFAULT_ROOT
) -> Task:
    """The task: one sample whose workspace holds the start kernel and the contract.

    Args:
        settings: Validated here; a bad value raises :class:`TaskArgumentError`.
        version: The task's version (bump it when a change could move scores).
        solver: Default: :func:`evals.bench.kernel_agent`.
        root: Repository root holding ``kernels/`` and ``sandboxes/``.
    """
    validate(settings)
    kernels = root / "kernels" / settings.target
    contract = (kernels / "CONTRACT.md").read_text()
    start = (kernels / START_FILES[settings.target]).read_text()
    sample = Sample(
        id=settings.target,
        input=build_prompt(settings, contract),
        files={settings.kernel_file: start, "CONTRACT.md": contract},
        metadata={"settings": settings.to_json()},
    )
    return Task(
        dataset=[sample],
        solver=solver or kernel_agent(),
        scorer=kernel_speedup(),
        sandbox=sandbox_spec(settings, root),
        # agent messages and tokens are enforced by the arms (evals.bench.budget), so that
        # questions and the questioner's tokens do not consume the agent's budget
        working_limit=settings.time_limit,
        version=version,
        metadata={"settings": settings.to_json()},
    )
