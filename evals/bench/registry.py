"""Inspect names: every arm resolves as ``NAME`` (from a task file) and as ``evals/NAME``.

This module is the package's ``inspect_ai`` entry point (``pyproject.toml``): importing it
registers every arm as ``evals/NAME`` and every task file as ``evals/<task>``.

Inspect names a registered object after the installed package that defines it, and resolves
an unqualified name only when a module it loaded by path registered it. So:

- a task file calls :func:`register_unqualified` with its own module name: thin aliases owned
  by the task file register every arm under its bare name;
- on import, :func:`register_qualified` has aliases owned by a module outside any package
  register every arm as ``evals/NAME`` (installed normally or in editable mode), and
  :func:`register_tasks` registers the packaged task files as ``evals/<task>``.

No solver code is duplicated per task.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
import types
from collections.abc import Callable
from importlib.resources import as_file
from typing import TypeVar

from inspect_ai import task
from inspect_ai.solver import solver

from evals.bench.arms import ARMS
from evals.bench.config.targets import TARGETS

__all__ = ["NAMESPACE", "register_qualified", "register_tasks", "register_unqualified"]

NAMESPACE = "evals"
_ALIAS_MODULE = "kernelseek_solver_aliases"
F = TypeVar("F", bound=Callable[..., object])


def register_unqualified(module_name: str) -> None:
    """Register every arm of :data:`~evals.bench.arms.ARMS` under its bare name.

    Args:
        module_name: The module owning the aliases (a task file's ``__name__``).
    """
    for name, factory in ARMS.items():
        solver(name=name)(_alias(factory, module_name, name))


def register_qualified() -> None:
    """Register every arm of :data:`~evals.bench.arms.ARMS` as ``evals/NAME``."""
    for name, factory in ARMS.items():
        solver(name=f"{NAMESPACE}/{name}")(_alias(factory, _alias_module(), name))


def register_tasks() -> list[str]:
    """Register each target's packaged task file as ``evals/<task>``; returns the names.

    Lets ``inspect eval evals/fa3_hopper`` work like ``inspect eval tasks/fa3_hopper`` (the
    files stay the one definition), from a checkout or an installed wheel.
    """
    names = []
    for name, target in TARGETS.items():
        with as_file(target.task_file()) as path:
            if not path.is_file():
                continue
            spec = importlib.util.spec_from_file_location(f"kernelseek_tasks_{name}", path)
            if spec is None or spec.loader is None:
                continue
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        task(name=f"{NAMESPACE}/{name}")(_alias(getattr(module, name), _alias_module()))
        names.append(f"{NAMESPACE}/{name}")
    return names


def _alias_module() -> str:
    """A module outside any package, to own the ``evals/`` aliases."""
    sys.modules.setdefault(_ALIAS_MODULE, types.ModuleType(_ALIAS_MODULE))
    return _ALIAS_MODULE


def _alias(factory: F, module_name: str, name: str | None = None) -> F:
    """A thin wrapper of ``factory`` owned by ``module_name`` (and renamed to ``name``)."""

    @functools.wraps(factory)
    def alias(*args: object, **kwargs: object) -> object:
        return factory(*args, **kwargs)

    alias.__module__ = module_name
    if name is not None:
        alias.__name__ = alias.__qualname__ = name
    return alias  # type: ignore[return-value]


register_qualified()
register_tasks()
