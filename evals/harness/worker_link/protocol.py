"""What the parent and the worker program share about the ``wall`` op's batches."""

from __future__ import annotations

import torch

from evals.harness.targets import Inputs, Target

__all__ = ["KEEP_BYTES", "fresh_queries"]


def fresh_queries(target: Target, sets: list[Inputs]) -> bool:
    """Whether the batches give each call a fresh q (the target refills queries, and has one).

    The parent uses the same rule to rebuild the inputs of any call it verifies.
    """
    q = sets[0].get("q") if sets else None
    return bool(target.timing.fresh_queries) and isinstance(q, torch.Tensor) and q.numel() > 0


KEEP_BYTES = 1 << 30
"""Outputs one batch may keep for the parent to fetch; the parent sizes batches within it."""
