"""Each run's seed: epochs differ, reruns repeat, ``-T seed_offset`` draws new ones."""

from __future__ import annotations

import hashlib
from typing import Any, Protocol

__all__ = ["run_seed", "sample_seed"]


class _Sample(Protocol):
    """What a seed is made of (an Inspect ``TaskState`` has it)."""

    @property
    def sample_id(self) -> int | str: ...

    @property
    def epoch(self) -> int: ...

    @property
    def metadata(self) -> dict[str, Any]: ...


def run_seed(state: _Sample) -> int:
    """The run's seed: the task's ``seed_offset`` plus the epoch (1, 2, ...)."""
    settings = state.metadata.get("settings") or {}
    return int(settings.get("seed_offset") or 0) + state.epoch


def sample_seed(state: _Sample) -> int:
    """A seed from the sample id and run seed: epochs differ, reruns repeat (no hash salting).

    ``-T seed_offset=N`` shifts the run seeds, so a second eval adds new draws.
    """
    digest = hashlib.sha256(f"{state.sample_id}/{run_seed(state)}".encode()).digest()
    return int.from_bytes(digest[:4], "big")
