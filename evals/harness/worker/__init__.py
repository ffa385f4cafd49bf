"""The worker program: what runs inside the worker processes, apart from the parent.

Two processes run it: the candidate's worker, which loads the candidate's library (its first
``dlopen``) under the OS sandbox, and the upstreams' worker, which never does. In the
candidate's worker every line here shares a process with the candidate's code, which can
rewrite its memory: nothing computed here is trusted by the parent unless checked from outside
(:mod:`evals.harness` THREATS.md). The parent imports nothing from this package (a test holds
it to that; what both ends share is :mod:`evals.harness.worker_link.protocol`); it starts the
program with ``python -m evals.worker_entry`` (:mod:`evals.harness.worker_link.worker_client`).

Modules: ``startup`` (the OS sandbox, the library, the ready message), ``serve`` (the request
loop), ``wall`` (back-to-back batches for the parent's clock), ``gated`` (a batch queued behind
the parent's gate), ``warm`` (upstream warm-up calls), ``timed_outputs`` (outputs kept from
timed calls), ``errors`` (a candidate's exceptions as failures), ``heap`` (freed memory kept
for reuse).
"""

SHARED = (
    "evals.harness.failures",
    "evals.harness.scenarios",
    "evals.harness.building.cache_dir",
    "evals.harness.building.compile_command",
    "evals.harness.clock_checks.digest",
    "evals.harness.clock_checks.query_flips",
    "evals.harness.measurement.gpu",
    "evals.harness.measurement.stream_gate",
    "evals.harness.measurement.timing",
    "evals.harness.sandbox.confine",
    "evals.harness.sandbox.hygiene",
    "evals.harness.sandbox.memory_walls",
    "evals.harness.sandbox.os_sandbox",
    "evals.harness.static.include_scan",
    "evals.harness.static.static_checks",
    "evals.harness.static.symbol_baseline",
    "evals.harness.static.symbol_rules",
    "evals.harness.static.syscalls",
    "evals.harness.targets.base",
    "evals.harness.targets.draw_space",
    "evals.harness.targets.guards",
    "evals.harness.targets.source_policy",
    "evals.harness.tracing.trace",
    "evals.harness.worker_link.channel",
    "evals.harness.worker_link.protocol",
)
"""The modules of other sub-packages the worker program loads, so that share the candidate's
process in its worker: nothing they compute there is trusted unless checked from outside. A
test holds this list to what the program really loads."""

__all__ = ["SHARED"]
