"""Solver names: every solver resolves as ``NAME`` (from a task file) and as ``evals/NAME``.

Inspect names a registered object after the installed package that defines it, and resolves
an unqualified name only when a module it loaded by path registered it. So:

- a task file calls :func:`register_unqualified` with its own module name: thin aliases owned
  by the task file register every solver under its bare name;
- the ``inspect_ai`` entry point (:mod:`evals.bench._registry`) calls
  :func:`register_qualified`: aliases owned by a module outside any package register every
  solver as ``evals/NAME``, whether the package is installed normally or in editable mode.

No solver code is duplicated per task.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
import types
from collections.abc import Callable
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.solver import Solver, solver

from evals.bench.agent import kernel_agent
from evals.bench.arms import kernelseek, kernelseek_bank, kernelseek_model
from evals.bench.autonomous import autonomous
from evals.bench.evolve import open_ended
from evals.bench.recipe import scripted

SOLVERS: dict[str, Callable[..., Solver]] = {
    "kernel_agent": kernel_agent,
    "kernelseek": kernelseek,
    "kernelseek_bank": kernelseek_bank,
    "kernelseek_model": kernelseek_model,
    "scripted": scripted,
    "open_ended": open_ended,
    "autonomous": autonomous,
}
NAMESPACE = "evals"
_ALIAS_MODULE = "kernelseek_solver_aliases"


def register_unqualified(module_name: str) -> None:
    """Register every solver of :data:`SOLVERS` under its bare name, owned by ``module_name``."""
    _register(module_name, prefix="")


def register_qualified() -> None:
    """Register every solver of :data:`SOLVERS` as ``evals/NAME``."""
    sys.modules.setdefault(_ALIAS_MODULE, types.ModuleType(_ALIAS_MODULE))
    _register(_ALIAS_MODULE, prefix=f"{NAMESPACE}/")


def _register(module_name: str, *, prefix: str) -> None:
    for name, factory in SOLVERS.items():
        solver(name=f"{prefix}{name}")(_alias(name, factory, module_name))


def _alias(name: str, factory: Callable[..., Solver], module_name: str) -> Callable[..., Solver]:
    @functools.wraps(factory)
    def alias(*args: object, **kwargs: object) -> Solver:
        return factory(*args, **kwargs)

    alias.__module__ = module_name
    alias.__name__ = alias.__qualname__ = name
    return alias


TASK_DIRS = ("cpu_attention", "fa3_hopper", "fa4_blackwell")


def register_tasks(root: Path) -> list[str]:
    """Register the task files under ``root/tasks`` as ``evals/<task>``; returns the names.

    Lets ``inspect eval evals/fa3_hopper`` work like ``inspect eval tasks/fa3_hopper`` (the
    files stay the one definition). Missing files (a wheel without the repository) are skipped.
    """
    sys.modules.setdefault(_ALIAS_MODULE, types.ModuleType(_ALIAS_MODULE))
    names = []
    for name in TASK_DIRS:
        path = root / "tasks" / name / f"{name}.py"
        if not path.is_file():
            continue
        spec = importlib.util.spec_from_file_location(f"kernelseek_tasks_{name}", path)
        if spec is None or spec.loader is None:
            continue
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        task(name=f"{NAMESPACE}/{name}")(_task_alias(getattr(module, name)))
        names.append(f"{NAMESPACE}/{name}")
    return names


def _task_alias(factory: Callable[..., Task]) -> Callable[..., Task]:
    @functools.wraps(factory)
    def alias(*args: object, **kwargs: object) -> Task:
        return factory(*args, **kwargs)

    alias.__module__ = _ALIAS_MODULE
    return alias
