"""What a gated wall-clock check prepares before its batches: cold copies and null batches.

A gated batch (:mod:`evals.harness.clock_checks.gated_batch`) flushes nothing between its
calls, so the worker makes copies of the round's input sets, enough to keep each call's
inputs cold; and what the parent subtracts from it is the same batch of calls that do nothing
(:mod:`evals.harness.clock_checks.null_batches`), made on a q of the candidate's q's shape and
dtype in the upstreams' worker. Each worker's gated link (the calls a batch may hold) is
learnt once per run.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Sequence
from typing import Any

import torch

from evals.harness.clock_checks.gated_batch import GatedLink, cold_copies
from evals.harness.clock_checks.null_batches import NullBatches
from evals.harness.clock_checks.wall_clock import Plan
from evals.harness.measurement.gpu import release_cached_memory
from evals.harness.scenarios import Scenario
from evals.harness.worker_link.session import Session, derive_seed
from evals.harness.worker_link.worker_client import WorkerClient

__all__ = ["link", "prepared"]

_LINKS: weakref.WeakKeyDictionary[WorkerClient, GatedLink] = weakref.WeakKeyDictionary()
"""Each worker's gated link: the calls its batches may hold, learnt once per run."""


def link(client: WorkerClient) -> GatedLink:
    """``client``'s gated link, made at its first gated batch."""
    return _LINKS.setdefault(client, GatedLink())


def prepared(
    session: Session, scenario: Scenario, prepare: dict[str, Any], plan: Plan, *, seed: int
) -> tuple[dict[str, Any], Plan]:
    """The gated check's ``wall`` preparing request and its plan with its null batches.

    ``prepare`` is the ungated request (its ``seeds`` the round's input sets); ``seed`` the
    check's. The null batches are None where the upstreams' worker has no gate of its own.
    """
    copies, query = _cold_copies(session, scenario, prepare["seeds"])
    prepare = {**prepare, "gated": True, "copies": copies}
    null = _null_batches(session, {**prepare, "impl": "null", "query": query}, plan, seed)
    return prepare, dataclasses.replace(plan, null=null)


def _cold_copies(
    session: Session, scenario: Scenario, seeds: Sequence[int]
) -> tuple[int, dict[str, Any]]:
    """Copies of the round's sets that keep a gated batch's inputs cold (:func:`cold_copies`).

    Sized from one set the parent makes and lets go before the worker makes its own: a KV
    cache (up to 32 GB a set) must not sit in both processes at once (``release_cached_memory``,
    as the verifier does before it rebuilds inputs). Also q's shape and dtype, which the null
    batches' queries take (:mod:`evals.harness.clock_checks.null_batches`).
    """
    one = session.target.make_timing_inputs(scenario, list(seeds[:1]))[0]
    tensors = [v for v in one.values() if isinstance(v, torch.Tensor)]
    size = sum(t.numel() * t.element_size() for t in tensors)
    l2 = torch.cuda.get_device_properties(tensors[0].device).L2_cache_size if tensors else 0
    q = one.get("q")
    query = (
        {}
        if not isinstance(q, torch.Tensor)
        else {"shape": list(q.shape), "dtype": str(q.dtype).removeprefix("torch.")}
    )
    del one, tensors, q
    release_cached_memory()
    return cold_copies(size, len(seeds), l2), query


def _null_batches(
    session: Session, prepare: dict[str, Any], plan: Plan, seed: int
) -> NullBatches | None:
    """The check's null batches, where the upstreams' worker has a gate of its own."""
    upstreams = session.upstreams
    if upstreams is None or not upstreams.gated:
        return None
    return NullBatches(
        client=upstreams,
        pause=session.client.paused,
        prepare=prepare,
        q_numel=plan.q_numel,
        seed=derive_seed(seed, "null"),
        timeout_s=session.target.limits.call_timeout_s,
        link=link(upstreams),
    )
