"""Warm start: the workers started, and one-off costs paid, before the device's lock is taken.

Nothing here measures. A worker's start (torch's import, its CUDA context, the candidate's
library loaded into its sandbox) and each library's first call (FA3's module, cuBLAS and cuDNN
handles, cuDNN kernels compiled where the JIT cache lacks them) took seconds inside the lock
of a GPU target, while other runs waited for it: on the H200, a dev self-check's first
scenario took 2.9 s to verify where the shapes after it took 0.1-0.4 s, and its setup 4 s.
So the workers start together, each upstream is called once on the lightest scenario it runs,
and this process computes one reference and baseline, all before the lock. The candidate's
own code is never called here (its first calls belong to the requests that judge it).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from evals.harness.failures import Code, Failure
from evals.harness.scenarios import Scenario
from evals.harness.targets import Target
from evals.harness.verification.verify import expected
from evals.harness.worker_link.session import derive_seed
from evals.harness.worker_link.worker_client import WorkerClient, WorkerFailure

__all__ = ["StartFailure", "lightest", "start_workers"]


class StartFailure(Exception):
    """A worker failed to start: the failure the run's scenarios get."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.reason)
        self.failure = failure


def lightest(target: Target, scenarios: Sequence[Scenario], upstream: str) -> Scenario | None:
    """The scenario moving the fewest bytes that ``upstream`` can run (None: it runs none)."""
    runs = [s for s in scenarios if target.upstream(upstream).unsupported_reason(s) is None]
    return min(runs, key=lambda s: target.work(s).bytes, default=None)


def _warm_calls(
    target: Target, client: WorkerClient, scenarios: Sequence[Scenario]
) -> dict[str, dict[str, object]]:
    """The upstreams a worker calls once (name -> scenario JSON): none in a candidate's."""
    if client.runs_candidate:
        return {}
    # not a candidate's: a self-check's (its one upstream) or the upstreams' own (all of them)
    up = client.candidate_upstream
    names = [up] if up else [u.name for u in target.upstreams]
    calls = {}
    for name in names:
        scenario = lightest(target, scenarios, name)
        if scenario is not None:
            calls[name] = scenario.to_json()
    return calls


def _start_one(client: WorkerClient, calls: dict[str, dict[str, object]], seed: int) -> None:
    client.start()
    if calls:
        # a worker lost here is started again by its next request, whose failure is judged
        with contextlib.suppress(WorkerFailure):
            client.request({"op": "warm", "calls": calls, "seed": seed})


def _warm_here(target: Target, scenarios: Sequence[Scenario], seed: int) -> None:
    """One reference and one baseline in this process, on the lightest scenario."""
    scenario = lightest(target, scenarios, target.accuracy.baseline)
    if scenario is None:
        return
    # a failure here recurs in the judged reference, which reports it with its reason
    with contextlib.suppress(Exception):
        expected(target, scenario, target.make_inputs(scenario, seed))


def start_workers(
    target: Target, clients: Sequence[WorkerClient], scenarios: Sequence[Scenario], seed: int
) -> float:
    """Start ``clients`` together (the candidate's first), warm them and this process.

    Returns the seconds it took. Raises :class:`StartFailure` with every worker closed: the
    candidate's failure where it failed, else the upstreams' worker's (a harness error).
    """
    t0 = time.monotonic()
    warm_seed = derive_seed(seed, "warm")
    with ThreadPoolExecutor(max_workers=len(clients)) as pool:
        futures = [
            pool.submit(_start_one, c, _warm_calls(target, c, scenarios), warm_seed)
            for c in clients
        ]
        _warm_here(target, scenarios, warm_seed)
        errors = [f.exception() for f in futures]
    failed = [(i, e) for i, e in enumerate(errors) if e is not None]
    if not failed:
        return time.monotonic() - t0
    for c in clients:
        c.close()
    index, error = failed[0]
    if not isinstance(error, WorkerFailure):
        raise error
    if index == 0:
        raise StartFailure(error.failure)
    reason = f"the upstreams' worker failed to start: {error.failure.reason}"
    raise StartFailure(Failure(Code.HARNESS_ERROR, reason))
