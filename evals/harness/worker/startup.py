"""The worker process's start: its OS sandbox, the candidate's library, then serving requests.

Started by :class:`evals.harness.worker_link.worker_client.WorkerClient` as
``python -m evals.worker_entry FD TARGET LIBRARY THREADS UPSTREAM [GATE_FD]``, which confines
the process's writes and then calls :func:`main`: a worker that loads a candidate initialises
what the candidate's calls will need, enters the OS sandbox, loads the library and says it is
ready (with what protects it), then :func:`evals.harness.worker.serve.serve` answers the
parent's requests.
"""

from __future__ import annotations

import resource
import socket
import sys
import tempfile

import torch

from evals.harness.failures import Code, Failure, one_line
from evals.harness.measurement.stream_gate import DeviceGate
from evals.harness.sandbox import os_sandbox
from evals.harness.targets import get_target
from evals.harness.worker.errors import CandidateError
from evals.harness.worker.heap import retain_freed_memory
from evals.harness.worker.serve import Worker, serve
from evals.harness.worker_link import channel


def enter_sandbox(worker: Worker, gate_fd: int | None = None) -> dict[str, object]:
    """Initialise what the candidate's calls will need, then load the OS sandbox.

    Before the filter: the CUDA context (GPU) or torch's OpenMP thread pool at the worker's
    thread count (CPU, where the filter lets no thread start: later parallel regions reuse
    the pool), and the target's timer. Imports and probes that create files run now (the
    CPU policy lets none be created later): Python stops writing bytecode caches, the temp
    folder is found (by creating a file) and cached, and torch imports its compiler, which
    makes its cache folder, on its first ``use_deterministic_algorithms`` (see
    :func:`evals.harness.worker.errors.poisoned_allocations`). A GPU worker given the parent's
    gate (``gate_fd``) maps and registers its page now, a driver call the filter need not
    allow. Returns the sandbox's record (:mod:`evals.harness.sandbox.os_sandbox`).
    """
    sys.dont_write_bytecode = True
    tempfile.gettempdir()
    torch.use_deterministic_algorithms(False)
    if worker.target.device == "cuda":
        torch.cuda.init()  # type: ignore[no-untyped-call]
        torch.empty(1, device="cuda")
        torch.cuda.synchronize()
        if gate_fd is not None:
            worker.gate = DeviceGate(gate_fd)
    else:
        a = torch.ones(256, 256)
        torch.mm(a, a)
        torch.ones(max(torch.get_num_threads(), 1) * 65536).add_(1).sum()  # every thread
    worker.timer()
    return os_sandbox.apply(os_sandbox.policy_for(worker.target.device))


def _memory_limit() -> int | None:
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else soft


def main(argv: list[str], *, writes: str = "not applied") -> int:
    """Entry point: ``FD TARGET LIBRARY THREADS CANDIDATE_UPSTREAM [GATE_FD]`` (``-``: none).

    A worker that loads a candidate enters the OS sandbox first; its ready message carries
    what protects the process (``protections``), ``writes`` included: the file-write
    confinement :mod:`evals.worker_entry` applied before this module was imported.
    """
    sock = socket.socket(fileno=int(argv[1]))
    retain_freed_memory()  # batches reuse the pages earlier batches faulted in (heap.py)
    target = get_target(argv[2])
    threads = int(argv[4])
    if threads > 0:
        torch.set_num_threads(threads)
    library = None if argv[3] == "-" else argv[3]
    worker = Worker(target, None if argv[5] == "-" else argv[5])
    protections: dict[str, object] = {"seccomp": "not applied: this worker runs no candidate"}
    gate_fd = int(argv[6]) if len(argv) > 6 and argv[6] != "-" else None
    try:
        if library is not None and worker.candidate_upstream is None:
            protections = enter_sandbox(worker, gate_fd)
            worker.load_candidate(library)
        elif gate_fd is not None and target.device == "cuda":  # upstreams: judged, or nulls
            worker.gate = DeviceGate(gate_fd)
    except CandidateError as exc:
        channel.send(sock, {"ok": False, "failure": exc.failure.to_json()})
        return 0
    except OSError as exc:
        failure = Failure(Code.LOAD_ERROR, f"cannot load the built library: {one_line(str(exc))}")
        channel.send(sock, {"ok": False, "failure": failure.to_json()})
        return 0
    protections["memory_limit_bytes"] = _memory_limit()
    protections["writes"] = writes
    channel.send(sock, {"ok": True, "ready": True, "protections": protections})
    serve(sock, worker)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))  # unconfined: evals.worker_entry is the candidate's entry point
