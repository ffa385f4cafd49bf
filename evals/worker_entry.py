"""Entry point of the candidate's worker process: confine its file writes, then run it.

Landlock restricts the calling thread and the threads it starts later, never those already
running; importing torch starts one and its OpenMP pool more, on which a candidate's parallel
regions run. So the confinement comes first, in a module that imports nothing but the
standard library, and :mod:`evals.harness.worker.startup` is imported after it.

Arguments are :func:`evals.harness.worker.startup.main`'s: ``FD TARGET LIBRARY THREADS UPSTREAM``.
"""

from __future__ import annotations

import os
import sys

from evals.landlock import restrict_writes

WORKER_DIR_ENV = "KERNELSEEK_WORKER_DIR"
"""The worker's private fresh folder, the only one its candidate may write to."""
SANDBOX_ENV = "KERNELSEEK_SANDBOX"  # as in evals.harness.sandbox.os_sandbox (not imported: torch)


def confine(argv: list[str]) -> str:
    """Confine a candidate's worker's writes to its private folder; the record of what held."""
    runs_candidate = len(argv) > 5 and argv[3] != "-" and argv[5] == "-"
    if not runs_candidate:
        return "not applied: this worker runs no candidate"
    mode = os.environ.get(SANDBOX_ENV, "").strip().lower()
    if mode in ("off", "audit"):
        return f"off: {SANDBOX_ENV}={mode}"
    folder = os.environ.get(WORKER_DIR_ENV, "")
    if not folder or not os.path.isdir(folder):
        return f"unavailable: no private folder ({WORKER_DIR_ENV} unset or missing)"
    # the CUDA driver writes to its own process's /proc entries at initialisation (seen on
    # the H200: error 304 without this rule); they are this process's state alone
    return restrict_writes([folder, "/proc/self"])


def main() -> int:
    """Confine, then hand over to the worker."""
    argv = ["worker", *sys.argv[1:]]
    record = confine(argv)
    from evals.harness.worker import startup  # only once the confinement holds

    return startup.main(argv, writes=record)


if __name__ == "__main__":
    sys.exit(main())
