"""Each sample's last checked verdict of each command, kept in its Inspect store.

Written by the scorer side once a run's verdict is checked, never by the agent; read back as
the typed record (:meth:`evals.harness.verdict.record.Verdict.from_json`).
"""

from __future__ import annotations

from typing import Any, Literal

from inspect_ai.util import store

from evals.harness.verdict.record import Verdict

__all__ = ["LAST_VERDICT_KEY", "last_verdict", "read_verdict", "remember"]

LAST_VERDICT_KEY = "kernelseek:last_verdict"


def last_verdict(command: Literal["check", "bench", "score"]) -> Verdict | None:
    """The checked verdict of this sample's last ``command`` run, or None.

    The store keeps it as JSON (:meth:`Verdict.to_json`); it is read back as the typed record.
    """
    verdicts: dict[str, Any] = store().get(LAST_VERDICT_KEY, {})
    found = verdicts.get(command)
    return None if found is None else Verdict.from_json(found)


def remember(command: Literal["check", "bench", "score"], verdict: Verdict | None) -> None:
    """Keep ``verdict`` as this sample's last ``command`` verdict (None: the last run had none).

    The store holds JSON: the verdict's :meth:`Verdict.to_json`.
    """
    verdicts: dict[str, Any] = store().get(LAST_VERDICT_KEY, {})
    kept = None if verdict is None else verdict.to_json()
    store().set(LAST_VERDICT_KEY, {**verdicts, command: kept})


async def read_verdict(command: Literal["check", "bench", "score"]) -> Verdict | None:
    """The verdict of the last ``command`` tool call (kept by the scorer side, not the agent's)."""
    return last_verdict(command)
