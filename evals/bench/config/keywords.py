"""Factories whose keyword arguments are the fields of one frozen settings dataclass.

Inspect reads a task's ``-T`` and a solver's ``-S`` arguments from the factory's signature (the
names it accepts, the defaults it logs). :func:`keyword_settings` gives a factory that takes
one settings object the keyword-only signature of the object's fields, so each group of
settings is declared once (its dataclass) instead of once per factory.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any, TypeVar

S = TypeVar("S")
R = TypeVar("R")

__all__ = ["keyword_settings", "keyword_signature"]


def keyword_signature(defaults: Any, returns: Any = inspect.Signature.empty) -> inspect.Signature:
    """One keyword-only parameter per field of the dataclass instance ``defaults``.

    Args:
        defaults: A dataclass instance; its values become the parameters' defaults.
        returns: The return annotation.
    """
    hints = typing.get_type_hints(type(defaults))
    params = [
        inspect.Parameter(
            f.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=getattr(defaults, f.name),
            annotation=hints[f.name],
        )
        for f in dataclasses.fields(defaults)
    ]
    return inspect.Signature(params, return_annotation=returns)


def keyword_settings(
    defaults: S,
) -> Callable[[Callable[[S], R]], Callable[..., R]]:
    """Turn ``factory(settings)`` into ``factory(**fields)``, defaults from ``defaults``.

    The wrapped factory's signature lists every field of ``defaults`` (a frozen dataclass
    instance) as a keyword-only argument; a call replaces the given fields and passes the
    settings object on. An unknown name raises :class:`TypeError`, as a plain function would.

    Args:
        defaults: The settings the factory gets when called without arguments.
    """

    def decorate(factory: Callable[[S], R]) -> Callable[..., R]:
        @functools.wraps(factory)
        def make(**kwargs: Any) -> R:
            return factory(dataclasses.replace(defaults, **kwargs))  # type: ignore[type-var]

        returns = inspect.signature(factory).return_annotation
        make.__signature__ = keyword_signature(defaults, returns)  # type: ignore[attr-defined]
        return make

    return decorate
