"""What ``python -m evals.inspect_cli eval`` checks before Inspect runs: one line for each mistake.

Inspect reports a wrong solver argument, a model without a provider or a missing Docker engine
as a long traceback, after it has built the task. These checks say the same in one line first:
the solver is an arm, every ``-S`` name one of its parameters, every ``-T`` name a task argument
with a valid value, ``--model`` names its provider (``provider/model``) whose package is
installed, a ``docker`` sandbox has an engine that answers, and a GPU target has a GPU to run on
(:func:`gpu_problem`).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from evals.bench.arms import ARMS
from evals.bench.config.targets import TARGETS
from evals.bench.config.task_args import TaskArgs
from evals.bench.config.validate import TaskArgumentError, validate
from evals.bench.task import target_settings

DEFAULT_ARM = "kernel_agent"
"""The arm a task runs without ``--solver``."""
PROVIDER_PACKAGES = {"openai": "openai", "anthropic": "anthropic"}
"""Providers with an extra of this project (``pip install '.[openai]'``): their package."""
DOCKER_TIMEOUT_S = 20.0
"""Seconds ``docker info`` may take to answer before the engine counts as missing."""


def option(args: list[str], name: str) -> str | None:
    """The value of ``--name VALUE`` or ``--name=VALUE`` in ``args`` (last wins), or None."""
    found = None
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            found = args[i + 1]
        elif a.startswith(name + "="):
            found = a.split("=", 1)[1]
    return found


def split_pairs(values: list[str], flag: str = "-T") -> list[tuple[str, str]]:
    """``NAME=VALUE`` strings (as given after ``flag``) as (name, raw value) pairs.

    Raises:
        TaskArgumentError: A value without ``=`` (one line naming it).
    """
    found = []
    for pair in values:
        name, sep, raw = pair.partition("=")
        if not sep or not name:
            raise TaskArgumentError(f"{flag} {pair}: expected NAME=VALUE")
        found.append((name, raw))
    return found


def pairs(args: list[str], flag: str) -> list[tuple[str, str]]:
    """Each ``flag NAME=VALUE`` of ``args`` (``-T``, ``-S``, ``-M``) as (name, raw value)."""
    found = []
    for i, arg in enumerate(args[:-1]):
        if arg == flag and "=" in args[i + 1]:
            name, raw = args[i + 1].split("=", 1)
            found.append((name, raw))
    return found


def preflight(args: list[str]) -> str | None:
    """One line saying what is wrong with an ``eval``'s arguments or machine, or None."""
    if args[:1] != ["eval"] or len(args) < 2:
        return None
    problem = _solver(args) or _model(args)
    if problem is not None:
        return problem
    target = Path(args[1].rstrip("/")).stem
    if target not in TARGETS:
        return None  # another task: Inspect checks its own arguments
    return _task(args, target)


def _solver(args: list[str]) -> str | None:
    solver = option(args, "--solver")
    arm = (solver or DEFAULT_ARM).removeprefix("evals/")
    if arm not in ARMS:
        return f"unknown solver {solver!r}: choose one of {', '.join(sorted(ARMS))}"
    known = list(inspect.signature(ARMS[arm]).parameters)
    for name, _ in pairs(args, "-S"):
        if name not in known:
            return f"unknown solver argument -S {name} for {arm}: choose from {', '.join(known)}"
    return None


def _model(args: list[str]) -> str | None:
    model = option(args, "--model") or os.environ.get("INSPECT_EVAL_MODEL")
    if not model:
        return None  # Inspect says so itself, in one line
    return model_problem(model, args) or provider_package_problem(model)


def model_problem(model: str, args: list[str] | None = None) -> str | None:
    """One line saying what is wrong with a model's name (and the ``-M`` of ``args``), or None."""
    provider, sep, _ = model.partition("/")
    if not sep:
        return (
            f"model {model!r} names no provider: write provider/model "
            f"(e.g. openai/{model}, anthropic/..., or mockllm/model offline)"
        )
    model_args = pairs(args or [], "-M")
    if provider == "mockllm" and any(name == "custom_outputs" for name, _ in model_args):
        return (
            "-M custom_outputs cannot come from the command line (mockllm needs ModelOutput "
            "objects): script an agent in Python with evals.replay, or run "
            "python -m evals.questioner_demo to meet every decision point offline"
        )
    return None


def provider_package_problem(model: str) -> str | None:
    """The extra to install where this machine lacks the package of ``model``'s provider."""
    provider = model.partition("/")[0]
    package = PROVIDER_PACKAGES.get(provider)
    if package is not None and importlib.util.find_spec(package) is None:
        return f"model {model!r} needs the {package} package: pip install '.[{provider}]'"
    return None


def task_args(target: str, values: list[tuple[str, str]]) -> TaskArgs:
    """``target``'s defaults with the ``-T NAME=VALUE`` pairs applied, validated.

    Raises:
        TaskArgumentError: An unknown name or a value the task refuses (one line).
    """
    known = {f.name for f in dataclasses.fields(TaskArgs)}
    parsed: dict[str, Any] = {}
    for name, raw in values:
        if name not in known:
            raise TaskArgumentError(
                f"unknown task argument -T {name}: choose from {', '.join(sorted(known))}"
            )
        parsed[name] = _scalar(raw)
    args = dataclasses.replace(TARGETS[target].defaults, **parsed)
    validate(target_settings(target, args))
    return args


def _task(args: list[str], target: str) -> str | None:
    try:
        settings = task_args(target, pairs(args, "-T"))
    except TaskArgumentError as exc:
        return str(exc)
    return device_problem(target, settings.sandbox)


def device_problem(target: str, sandbox: str) -> str | None:
    """What this machine lacks to score ``target`` in ``sandbox``: its GPU, a Docker engine."""
    problem = gpu_problem(target, sandbox)
    if problem is None and sandbox == "docker":
        problem = docker_problem()
    return problem


def gpu_problem(target: str, sandbox: str) -> str | None:
    """Why GPU target ``target`` cannot run in ``sandbox`` on this machine, or None.

    ``local``: the harness runs here, so what it would refuse (no CUDA GPU torch can see, no
    toolkit, no upstream) is said here, before the agent starts. ``docker``: the scorer's
    container is handed this host's GPUs, so the host needs an NVIDIA device. ``k8s``: the
    cluster's nodes hold the GPUs; nothing to check here.
    """
    if TARGETS[target].device != "gpu" or sandbox == "k8s":
        return None
    if sandbox == "local":
        from evals.harness.pipeline.environment import environment_fault  # imports torch
        from evals.harness.targets import get_target

        fault = environment_fault(get_target(target), building=True)
        return None if fault is None else f"{target} cannot run here: {fault.reason}"
    if has_nvidia_device():
        return None
    return (
        f"no NVIDIA GPU on this machine: {target} runs on one (the {sandbox} sandbox hands the "
        "host's GPUs to its scorer); without one, run tasks/cpu_attention"
    )


def has_nvidia_device() -> bool:
    """Whether this host has an NVIDIA GPU device node (what a container would be handed)."""
    dev = Path("/dev")
    return (dev / "nvidiactl").exists() and any(dev.glob("nvidia[0-9]*"))


def docker_problem() -> str | None:
    """Why the ``docker`` sandbox cannot start here (no client, no engine), or None."""
    hint = "start Docker, or run -T sandbox=local (no isolation)"
    if shutil.which("docker") is None:
        return f"no Docker engine: the docker command is not on PATH ({hint})"
    try:
        proc = subprocess.run(
            ["docker", "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            text=True,
            timeout=DOCKER_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"no Docker engine: docker info failed ({type(exc).__name__}; {hint})"
    if proc.returncode != 0:
        said = (proc.stderr.strip().splitlines() or ["no answer"])[-1]
        return f"no Docker engine: {said} ({hint})"
    return None


def _scalar(raw: str) -> Any:
    """A ``-T`` value as Inspect reads it: a number, a boolean, null, or else the string."""
    try:
        return json.loads(raw)
    except ValueError:
        return raw
